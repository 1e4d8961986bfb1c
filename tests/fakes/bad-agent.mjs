#!/usr/bin/env node
// A scripted misbehaving ACP agent for the engine's hardening tests (tests/e2e/misbehaving-agents.test.mjs).
// It speaks ACP on the official @agentclientprotocol/sdk where it speaks ACP at all, and writes raw
// bytes where it must misbehave. One mode per run: BAD_AGENT_MODE, else the content of the file
// BAD_AGENT_MODE_FILE (read at start, so one engine can run a bad agent, then a good one), else the
// first argument. A mode is "name" or "name:argument"; an unknown name (e.g. "good") behaves well.
//
//   hang-on-prompt          answers initialize and session/new; a prompt gets one chunk, then nothing
//                           ever again (session/cancel is ignored)
//   flood-chunks[:MB]       a prompt gets MB (20) megabytes of agent_message_chunk as fast as
//                           it can, then end_turn
//   long-line[:MB]          a prompt gets one line that never ends (MB, default 40, megabytes of "x")
//   invalid-bytes           before each answer: lines that aren't JSON, invalid UTF-8, binary garbage
//                           (NUL, 0xFF, escape sequences) on stdout and stderr; then a normal answer
//   garbage-only            never speaks ACP: garbage lines on stdout, forever
//   exit-mid-turn[:X]       a prompt gets one chunk, then the process exits with code X (3), or is
//                           killed by signal X when X is a name (SIGSEGV, SIGKILL)
//   grandchild-holds-stdout starts a child in its own process group that keeps stdout and stderr open,
//                           then exits 1 on the first prompt
//   daemon-holds-stdout     double-forks a daemon (setsid: out of the process group) that keeps stdout
//                           open, then exits 1 on the first prompt
//   daemon-detached         double-forks a daemon with no descriptors of ours (a proper daemon) and
//                           goes on working normally
//   ignore-sigterm          ignores SIGTERM, and so does a child it starts (in its group)
//   silent                  reads stdin, never writes a byte (initialize is never answered)
//   wrong-id-unknown        a prompt is answered under an id the client never used
//   wrong-id-duplicate      a prompt gets a second reply to initialize (already answered)
//   wrong-id-type           a prompt is answered under its id as a string ("3" for 3)
//   unsupported-requests    a prompt makes requests the client does not offer (an unknown method,
//                           terminal/create, fs/read_text_file), then answers with the error codes
//
// BAD_AGENT_LOG: a JSON-lines log ({kind: "start", mode, pid, pgid, sid}, {kind: "descendant", agent,
// role, pid, ppid, pgid, sid}, {kind: "reply", agent, method, code}, ...), written synchronously so a
// crash keeps it; `agent` is the pid of the agent the entry belongs to.
import { agent, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk/unstable";
import { appendFileSync, readFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

// "name" or "name:argument" (exit-mid-turn:3, exit-mid-turn:SIGSEGV, flood-chunks:20, long-line:40).
function readMode() {
  if (process.env.BAD_AGENT_MODE) return process.env.BAD_AGENT_MODE;
  if (process.env.BAD_AGENT_MODE_FILE) {
    try {
      return readFileSync(process.env.BAD_AGENT_MODE_FILE, "utf8").trim();
    } catch {}
  }
  return process.argv[2] || "";
}
const [MODE, ARG] = readMode().split(":");
const LOG = process.env.BAD_AGENT_LOG;
const MB = Number(ARG || (MODE === "long-line" ? 40 : 20));
const forever = () => new Promise(() => {});
const keepAlive = () => setInterval(() => {}, 1 << 30);

function log(entry) {
  if (LOG) appendFileSync(LOG, JSON.stringify({ agent: process.pid, ...entry }) + "\n");
}

function procIds(pid = "self") {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]) };
}

// A node process that sleeps forever (optionally ignoring SIGTERM) and logs its pid and ids.
const SLEEPER = `
  const fs = require("node:fs");
  if (process.env.BAD_SLEEPER_IGNORE_TERM) process.on("SIGTERM", () => {});
  const f = fs.readFileSync("/proc/self/stat", "utf8").slice(fs.readFileSync("/proc/self/stat", "utf8").lastIndexOf(")") + 2).split(" ");
  if (process.env.BAD_AGENT_LOG) fs.appendFileSync(process.env.BAD_AGENT_LOG, JSON.stringify({ kind: "descendant", agent: +process.env.BAD_AGENT_PID, role: process.env.BAD_SLEEPER_ROLE, pid: process.pid, ppid: +f[1], pgid: +f[2], sid: +f[3] }) + "\\n");
  setInterval(() => {}, 1 << 30);
`;

/** A sleeper in our process group (a plain child). */
function startChild(role, stdio, env = {}) {
  const c = spawn(process.execPath, ["-e", SLEEPER], { stdio, env: { ...process.env, BAD_AGENT_PID: String(process.pid), BAD_SLEEPER_ROLE: role, ...env } });
  c.unref();
}

/**
 * The classic double fork: an intermediate process starts the daemon in a new session (Node's
 * `detached` is setsid) and exits at once, so the daemon is re-parented away from us and out of our
 * process group. `stdio` is what the daemon keeps of ours.
 */
function doubleFork(role, stdio) {
  const inner = `
    const { spawn } = require("node:child_process");
    const d = spawn(process.execPath, ["-e", ${JSON.stringify(SLEEPER)}], { detached: true, stdio: ${JSON.stringify(stdio)} });
    d.unref();
    process.exit(0);
  `;
  const c = spawn(process.execPath, ["-e", inner], { stdio, env: { ...process.env, BAD_AGENT_PID: String(process.pid), BAD_SLEEPER_ROLE: role } });
  return new Promise((r) => c.on("exit", r));
}

/** Resolves once a descendant of ours has written its log entry (10 s at most). */
async function descendantsUp() {
  for (let i = 0; i < 200; i++) {
    try {
      if (readFileSync(LOG, "utf8").split("\n").some((l) => l.includes(`"kind":"descendant","agent":${process.pid},`))) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
}

log({ kind: "start", mode: MODE, pid: process.pid, ...procIds() });

// ---- modes that never speak ACP -------------------------------------------
if (MODE === "silent") {
  process.stdin.resume(); // hold the pipe, say nothing
  keepAlive();
} else if (MODE === "garbage-only") {
  const junk = [Buffer.from("not json at all\n"), Buffer.from([0xff, 0xfe, 0x00, 0x1b, 0x5b, 0x32, 0x4a, 0x0a]), Buffer.from("{\"jsonrpc\":\"2.0\",\"id\":\n")];
  let i = 0;
  setInterval(() => process.stdout.write(junk[i++ % junk.length]), 50);
  process.stdin.resume();
} else {
  await speakAcp();
}

async function speakAcp() {
  if (MODE === "ignore-sigterm") {
    process.on("SIGTERM", () => log({ kind: "sigterm-ignored" }));
    startChild("group-child", "ignore", { BAD_SLEEPER_IGNORE_TERM: "1" });
    keepAlive();
  }
  if (MODE === "grandchild-holds-stdout") startChild("group-child", ["ignore", "inherit", "inherit"]);
  if (MODE === "daemon-holds-stdout") await doubleFork("daemon", ["ignore", "inherit", "inherit"]);
  if (MODE === "daemon-detached") await doubleFork("daemon", "ignore");
  // Speak only once the descendants run (they log themselves), so they are there to be left behind.
  if (["ignore-sigterm", "grandchild-holds-stdout", "daemon-holds-stdout", "daemon-detached"].includes(MODE)) await descendantsUp();

  // The ids of what the client sends, to answer under the wrong ones.
  const lastId = {};
  const wire = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
  const tapped = {
    writable: wire.writable,
    readable: wire.readable.pipeThrough(new TransformStream({
      transform(msg, ctl) {
        if (msg && typeof msg.method === "string" && msg.id !== undefined) lastId[msg.method] = msg.id;
        ctl.enqueue(msg);
      },
    })),
  };
  const raw = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
  const garbage = () => {
    process.stdout.write("this line is not JSON\n");
    process.stdout.write(Buffer.concat([Buffer.from("invalid utf-8: "), Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0xf0, 0x28, 0x8c, 0xbc, 0xff]), Buffer.from("\n")]));
    process.stdout.write(Buffer.from([0x00, 0x01, 0x02, 0x1b, 0x5b, 0x32, 0x4a, 0x7f, 0x80, 0xfe, 0x0a]));
    process.stdout.write("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":\n"); // cut JSON
    process.stderr.write(Buffer.concat([Buffer.from("stderr: "), Buffer.from([0xc0, 0xaf, 0xed, 0xa0, 0x80, 0x00, 0xff]), Buffer.from(" end\n")]));
  };

  const app = agent({ name: "leuria-bad-agent" })
    .onRequest(methods.agent.initialize, async () => ({
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false, promptCapabilities: { image: false, audio: false, embeddedContext: false }, mcpCapabilities: { http: true, sse: false } },
      agentInfo: { name: "bad-agent", title: "Bad Agent", version: "1.0.0" },
      authMethods: [],
    }))
    .onRequest(methods.agent.session.new, async () => ({ sessionId: `bad-${process.pid}` }))
    .onNotification(methods.agent.session.cancel, async () => log({ kind: "cancel-ignored" }))
    .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
      const { sessionId } = params;
      const say = (text) => client.notify(methods.client.session.update, { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } });
      const promptId = lastId[methods.agent.session.prompt];
      switch (MODE) {
        case "hang-on-prompt":
          await say("working on it...");
          return forever();
        case "flood-chunks": {
          const piece = "flood ".repeat(64 * 1024 / 6);
          for (let sent = 0; sent < MB * 1024 * 1024; sent += piece.length) await say(piece);
          return { stopReason: "end_turn" };
        }
        case "long-line":
          process.stdout.write("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"text\":\"");
          process.stdout.write(Buffer.alloc(MB * 1024 * 1024, "x"));
          return forever();
        case "invalid-bytes":
          garbage();
          await say("still here");
          return { stopReason: "end_turn" };
        case "exit-mid-turn":
          await say("about to go");
          process.stdout.write("", () => {
            if (ARG && ARG.startsWith("SIG")) process.kill(process.pid, ARG);
            else process.exit(Number(ARG || 3));
          });
          return forever();
        case "grandchild-holds-stdout":
        case "daemon-holds-stdout":
          await say("leaving my children behind");
          process.stdout.write("", () => process.exit(1));
          return forever();
        case "wrong-id-unknown":
          raw({ jsonrpc: "2.0", id: 424242, result: { stopReason: "end_turn" } });
          return forever();
        case "wrong-id-duplicate":
          raw({ jsonrpc: "2.0", id: lastId[methods.agent.initialize], result: { protocolVersion: PROTOCOL_VERSION } });
          return forever();
        case "wrong-id-type":
          raw({ jsonrpc: "2.0", id: String(promptId), result: { stopReason: "end_turn" } });
          return forever();
        case "unsupported-requests": {
          const codes = [];
          for (const [method, p] of [
            ["x/not_a_method", { sessionId }],
            ["terminal/create", { sessionId, command: "sh", args: ["-c", "id"] }],
            ["fs/read_text_file", { sessionId, path: "/etc/passwd" }],
          ]) {
            try {
              await client.request(method, p);
              codes.push(`${method}=ok`);
            } catch (e) {
              codes.push(`${method}=${e.code}`);
            }
            log({ kind: "reply", method, code: codes.at(-1) });
          }
          await say(`survived: ${codes.join(" ")}`);
          return { stopReason: "end_turn" };
        }
        default:
          await say("fine");
          return { stopReason: "end_turn" };
      }
    });
  const conn = app.connect(tapped);
  conn.closed.then(() => {
    log({ kind: "stdin-closed" });
    if (MODE !== "ignore-sigterm") process.exit(0);
  });
}
