#!/usr/bin/env node
// Scripted ACP (v1) agent for the engine's end-to-end tests, built on the
// official @agentclientprotocol/sdk (agent app + ndJsonStream over stdio), so
// everything on the wire is the real format and incoming params are checked
// against the SDK's schema (an invalid request gets the SDK's JSON-RPC error).
//
// Behaviour is chosen by FAKE_ACP_MODE (comma-separated words, see README.md):
//   no-images no-http-mcp crash-on-prompt exit0-on-prompt exit-on-start
//   hang-on-initialize garbage ignore-sigterm stay-after-stdin-close slow
//   many-chunks stderr permission modes models spawn-grandchild write-files
//   mcp-call refuse-set-mode close-stdout-on-prompt close-stdin-on-prompt
//   permission-after-cancel
// Knobs: FAKE_ACP_LOG (JSON-lines log file), FAKE_ACP_DELAY_MS (200),
//   FAKE_ACP_CHUNKS (20; 500 for many-chunks), FAKE_ACP_OPTION_STYLE
//   (claude|old|gemini), FAKE_ACP_TOOL_NAME (mcp__webmcp__lookup),
//   FAKE_ACP_CONFIG_OPTIONS=1 (with `models`: also a model config option),
//   FAKE_ACP_CHUNK_PAD (0: extra characters in each `slow`/`many-chunks` chunk; many-chunks logs
//   {kind:"progress", chunks} every 100),
//   FAKE_ACP_CALL_TOOL (lookup) and FAKE_ACP_CALL_ARGS ({}) for `mcp-call`,
//   FAKE_ACP_AGENT_NAME (fake-acp-agent): initialize's agentInfo.name ("-": no agentInfo).
//
// The SDK 2.x removed the legacy AgentSideConnection class; `agent()` +
// `connect(ndJsonStream(...))` is its replacement. `/unstable` is the
// entrypoint the real Claude adapter uses; `session/set_model` (which Gemini
// CLI still serves) is no longer in the schema, so it is a custom method here.
import { agent, methods, ndJsonStream, RequestError, PROTOCOL_VERSION } from "@agentclientprotocol/sdk/unstable";
import { appendFileSync, closeSync, readFileSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
// `mcp-call`: the official MCP client, over the transport session/new names.
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const MODE = new Set((process.env.FAKE_ACP_MODE || "").split(",").map((s) => s.trim()).filter(Boolean));
const has = (m) => MODE.has(m);
const LOG = process.env.FAKE_ACP_LOG;
const DELAY_MS = Number(process.env.FAKE_ACP_DELAY_MS || 200);
const CHUNKS = Number(process.env.FAKE_ACP_CHUNKS || (has("many-chunks") ? 500 : 20));
const OPTION_STYLE = process.env.FAKE_ACP_OPTION_STYLE || "claude";
const TOOL_NAME = process.env.FAKE_ACP_TOOL_NAME || "mcp__webmcp__lookup";
// FAKE_ACP_CHUNK_PAD=n: `slow`/`many-chunks` chunks become `chunk <i><n dots>\n` (big streams, few events).
const PAD = ".".repeat(Number(process.env.FAKE_ACP_CHUNK_PAD || 0));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Appends one JSON line to FAKE_ACP_LOG (synchronously, so crashes keep it). */
function log(entry) {
  if (LOG) appendFileSync(LOG, JSON.stringify(entry) + "\n");
}

/** Process group and session ids from /proc/self/stat (fields 5 and 6). */
function procIds() {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // state ppid pgrp session ...
  return { ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]) };
}

// ---- start-up behaviours -------------------------------------------------
const start = {
  kind: "start", pid: process.pid, ...procIds(), cwd: process.cwd(),
  env: Object.keys(process.env).sort(), argv: process.argv.slice(2),
};
if (has("spawn-grandchild")) {
  // Same process group as us (not detached): the engine must kill the group.
  const child = spawn("sleep", ["1000"], { stdio: "ignore" });
  start.grandchildPid = child.pid;
}
if (has("write-files")) {
  writeFileSync(join(process.cwd(), "fake-agent-was-here.txt"), "scratch\n");
  start.wroteFile = join(process.cwd(), "fake-agent-was-here.txt");
}
log(start);
if (has("exit-on-start")) process.exit(5);
if (has("garbage")) {
  // Non-JSON lines and JSON of the wrong shape, before any real message.
  process.stdout.write("this is not JSON\n{{{ neither is this\n");
  process.stdout.write(JSON.stringify({ hello: "world", note: "not JSON-RPC" }) + "\n");
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", method: 42, params: "wrong" }) + "\n");
}
if (has("ignore-sigterm")) process.on("SIGTERM", () => log({ kind: "sigterm-ignored" }));
if (has("stay-after-stdin-close") || has("ignore-sigterm")) setInterval(() => {}, 1 << 30);

// ---- wire tap: log what the client sends, exactly as sent ----------------
const LOGGED = {
  [methods.agent.initialize]: "initialize",
  [methods.agent.session.new]: "session/new",
  [methods.agent.session.prompt]: "prompt",
  [methods.agent.session.cancel]: "cancel",
  [methods.agent.session.setMode]: "set_mode",
  "session/set_model": "set_model",
  [methods.agent.session.setConfigOption]: "set_config_option",
};
const wire = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const tapped = {
  writable: wire.writable,
  readable: wire.readable.pipeThrough(new TransformStream({
    transform(msg, ctl) {
      if (msg && typeof msg.method === "string") {
        log({ kind: LOGGED[msg.method] ?? "other", method: msg.method, params: msg.params });
      }
      ctl.enqueue(msg);
    },
  })),
};

// ---- session state -------------------------------------------------------
const MODELS = [{ modelId: "small", name: "Small" }, { modelId: "big", name: "Big" }];
const MODES = [
  { id: "default", name: "Default", description: "Asks before running tools" },
  { id: "auto", name: "Auto", description: "Decides by itself" },
  { id: "plan", name: "Plan", description: "Read-only" },
];
const sessions = new Map(); // sessionId -> {mode, model, abort: AbortController|null}

function modelConfigOptions(s) {
  return [{
    id: "model", name: "Model", category: "model", type: "select", currentValue: s.model,
    options: MODELS.map((m) => ({ value: m.modelId, name: m.name })),
  }];
}
function getSession(sessionId) {
  const s = sessions.get(sessionId);
  if (!s) throw RequestError.sessionNotFound(sessionId);
  return s;
}

/** Text the agent echoes: text blocks verbatim, other blocks as a tag, joined by \n. */
function describePrompt(prompt) {
  return prompt.map((b) => {
    if (b.type === "text") return b.text;
    if (b.type === "image") return `[image ${b.mimeType}]`;
    return `[${b.type}]`;
  }).join("\n");
}

/** Splits text into up to `n` pieces whose concatenation is the text. */
function pieces(text, n = 3) {
  const size = Math.max(1, Math.ceil(text.length / n));
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [""];
}

// Permission option sets as the real agents send them (ids differ; kinds agree).
const OPTION_SETS = {
  claude: () => [
    { optionId: "allow-once", name: "Yes", kind: "allow_once" },
    { optionId: "allow-with-updates", name: "Yes, and don't ask again", kind: "allow_always" },
    { optionId: "reject", name: "No", kind: "reject_once" },
  ],
  old: () => [ // claude-code-acp (older adapter): "always" comes first
    { optionId: "allow_always", name: "Always Allow", kind: "allow_always" },
    { optionId: "allow", name: "Allow", kind: "allow_once" },
    { optionId: "reject", name: "Reject", kind: "reject_once" },
  ],
  gemini: (isMcp) => [
    ...(isMcp
      ? [{ optionId: "proceed_always_server", name: "Allow all server tools for this session", kind: "allow_always" },
         { optionId: "proceed_always_tool", name: "Allow tool for this session", kind: "allow_always" }]
      : [{ optionId: "proceed_always", name: "Allow for this session", kind: "allow_always" }]),
    { optionId: "proceed_once", name: "Allow", kind: "allow_once" },
    { optionId: "cancel", name: "Reject", kind: "reject_once" },
  ],
};

/**
 * One tool call that needs permission. Claude-style agents announce the call
 * with `tool_call` first; Gemini (default mode) announces it only inside
 * `session/request_permission` and sends `tool_call` after the answer.
 * Returns the chosen optionId, or "cancelled".
 */
async function toolWithPermission(client, sessionId, n, toolName, kind, rawInput) {
  const toolCallId = `call_${n}_${Date.now()}`;
  const gemini = OPTION_STYLE === "gemini";
  const call = { toolCallId, title: toolName, kind, status: "pending", rawInput };
  if (!gemini) await client.notify(methods.client.session.update, { sessionId, update: { sessionUpdate: "tool_call", ...call } });
  const options = (OPTION_SETS[OPTION_STYLE] || OPTION_SETS.claude)(toolName.includes("webmcp"));
  const request = { sessionId, toolCall: call, options };
  let response;
  try {
    response = await client.request(methods.client.session.requestPermission, request);
  } catch (e) {
    log({ kind: "permission", request, error: { code: e.code, message: e.message } });
    return "error";
  }
  log({ kind: "permission", request, response });
  const chosen = response.outcome.outcome === "selected" ? response.outcome.optionId : "cancelled";
  const allowed = options.find((o) => o.optionId === chosen)?.kind?.startsWith("allow_") ?? false;
  const done = allowed
    ? { status: "completed", content: [{ type: "content", content: { type: "text", text: `${toolName} result` } }], rawOutput: { ok: true } }
    : { status: "failed", content: [{ type: "content", content: { type: "text", text: "Permission denied" } }] };
  if (gemini) {
    await client.notify(methods.client.session.update, { sessionId, update: { sessionUpdate: "tool_call", ...call, status: "in_progress" } });
  }
  await client.notify(methods.client.session.update, { sessionId, update: { sessionUpdate: "tool_call_update", toolCallId, ...done } });
  return chosen;
}

// ---- mcp-call: one call of a page tool through the `webmcp` MCP server ------
/** Connects an MCP client to the `webmcp` entry of session/new's mcpServers (HTTP, or stdio). */
async function connectWebmcp(servers) {
  const entry = servers.find((m) => m.name === "webmcp");
  if (!entry) throw new Error(`no webmcp MCP server in session/new: ${JSON.stringify(servers)}`);
  let transport;
  if (entry.type === "http" || (entry.url && !entry.command)) {
    const headers = Object.fromEntries((entry.headers || []).map((h) => [h.name, h.value]));
    transport = new StreamableHTTPClientTransport(new URL(entry.url), { requestInit: { headers } });
  } else {
    const env = Object.fromEntries((entry.env || []).map((e) => [e.name, e.value]));
    transport = new StdioClientTransport({ command: entry.command, args: entry.args || [], env: { PATH: process.env.PATH, ...env }, stderr: "pipe" });
    transport.stderr?.on("data", (d) => log({ kind: "mcp-stdio-stderr", text: String(d) }));
  }
  const client = new McpClient({ name: "fake-acp-agent", version: "1.0.0" });
  await client.connect(transport);
  return { client, entry };
}

/** Text of an MCP tool result (text blocks joined). */
function resultText(r) {
  return (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

/**
 * `mcp-call`: list the page's tools, announce and ask permission for mcp__webmcp__<tool>, call it with
 * FAKE_ACP_CALL_ARGS, and return the reply line: `tool result: <text>` / `tool error: <message>` /
 * `tool denied: <optionId>`.
 */
async function mcpCall(client, sessionId, s) {
  const tool = process.env.FAKE_ACP_CALL_TOOL || "lookup";
  const args = JSON.parse(process.env.FAKE_ACP_CALL_ARGS || "{}");
  const toolName = `mcp__webmcp__${tool}`;
  let mcp;
  try {
    mcp = await connectWebmcp(s.mcpServers);
  } catch (e) {
    log({ kind: "mcp-call", tool, error: `connect: ${e.message}` });
    return `tool error: connect: ${e.message}`;
  }
  try {
    const { tools } = await mcp.client.listTools();
    log({ kind: "mcp-tools", transport: mcp.entry.type || "stdio", tools });
    const gemini = OPTION_STYLE === "gemini";
    const toolCallId = `mcp_${Date.now()}`;
    const call = {
      toolCallId, title: gemini ? `${tool} (webmcp MCP Server)` : toolName, kind: "other", status: "pending", rawInput: args,
      ...(OPTION_STYLE === "claude" ? { _meta: { claudeCode: { toolName } } } : {}),
    };
    const update = (u) => client.notify(methods.client.session.update, { sessionId, update: u });
    if (!gemini) await update({ sessionUpdate: "tool_call", ...call });
    const options = (OPTION_SETS[OPTION_STYLE] || OPTION_SETS.claude)(true);
    const request = { sessionId, toolCall: call, options };
    const response = await client.request(methods.client.session.requestPermission, request);
    log({ kind: "permission", request, response });
    const chosen = response.outcome.outcome === "selected" ? response.outcome.optionId : "cancelled";
    if (!(options.find((o) => o.optionId === chosen)?.kind?.startsWith("allow_"))) {
      await update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed", content: [{ type: "content", content: { type: "text", text: "Permission denied" } }] });
      return `tool denied: ${chosen}`;
    }
    if (gemini) await update({ sessionUpdate: "tool_call", ...call, status: "in_progress" });
    else await update({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
    try {
      const r = await mcp.client.callTool({ name: tool, arguments: args });
      const text = resultText(r);
      log({ kind: "mcp-call", tool, args, result: r });
      await update({ sessionUpdate: "tool_call_update", toolCallId, status: r.isError ? "failed" : "completed", content: [{ type: "content", content: { type: "text", text } }] });
      return r.isError ? `tool error: ${text}` : `tool result: ${text}`;
    } catch (e) {
      log({ kind: "mcp-call", tool, args, error: e.message, code: e.code });
      await update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed", content: [{ type: "content", content: { type: "text", text: e.message } }] });
      return `tool error: ${e.message}`;
    }
  } finally {
    await mcp.client.close().catch(() => {});
  }
}

// ---- the agent -----------------------------------------------------------
const app = agent({ name: "leuria-fake-acp-agent" })
  .onRequest(methods.agent.initialize, async () => {
    if (has("hang-on-initialize")) return new Promise(() => {}); // never answers
    return {
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: false,
        promptCapabilities: { image: !has("no-images"), audio: false, embeddedContext: true },
        mcpCapabilities: { http: !has("no-http-mcp"), sse: false },
      },
      ...(process.env.FAKE_ACP_AGENT_NAME === "-" ? {} : {
        agentInfo: { name: process.env.FAKE_ACP_AGENT_NAME || "fake-acp-agent", title: "Fake ACP Agent", version: "1.0.0" },
      }),
      authMethods: [],
    };
  })
  .onRequest(methods.agent.session.new, async ({ params }) => {
    const sessionId = `fake-${process.pid}-${sessions.size + 1}`;
    const s = { mode: "auto", model: "small", abort: null, mcpServers: params.mcpServers || [] };
    sessions.set(sessionId, s);
    if (has("write-files")) writeFileSync(join(params.cwd, "fake-session-file.txt"), "scratch\n");
    const res = { sessionId };
    if (has("modes")) res.modes = { currentModeId: s.mode, availableModes: MODES };
    if (has("models")) {
      // Legacy (pre-config-options) model list, as Gemini CLI still sends it.
      res.models = { currentModelId: s.model, availableModels: MODELS };
      if (process.env.FAKE_ACP_CONFIG_OPTIONS === "1") res.configOptions = modelConfigOptions(s);
    }
    return res;
  })
  .onRequest(methods.agent.session.setMode, async ({ params, client }) => {
    const s = getSession(params.sessionId);
    if (has("refuse-set-mode")) throw RequestError.internalError(undefined, "modes are locked");
    if (!MODES.some((m) => m.id === params.modeId)) throw RequestError.invalidParams(undefined, `unknown mode ${params.modeId}`);
    s.mode = params.modeId;
    await client.notify(methods.client.session.update, { sessionId: params.sessionId, update: { sessionUpdate: "current_mode_update", currentModeId: s.mode } });
    return {};
  })
  .onRequest("session/set_model", (p) => {
    if (!p || typeof p.sessionId !== "string" || typeof p.modelId !== "string") throw RequestError.invalidParams(p, "sessionId and modelId required");
    return p;
  }, async ({ params }) => {
    const s = getSession(params.sessionId);
    if (!MODELS.some((m) => m.modelId === params.modelId)) throw RequestError.invalidParams(undefined, `unknown model ${params.modelId}`);
    s.model = params.modelId;
    return {};
  })
  .onRequest(methods.agent.session.setConfigOption, async ({ params }) => {
    const s = getSession(params.sessionId);
    if (!(has("models") && process.env.FAKE_ACP_CONFIG_OPTIONS === "1") || params.configId !== "model") {
      throw RequestError.invalidParams(undefined, `unknown config option ${params.configId}`);
    }
    if (!MODELS.some((m) => m.modelId === params.value)) throw RequestError.invalidParams(undefined, `unknown value ${params.value}`);
    s.model = params.value;
    return { configOptions: modelConfigOptions(s) };
  })
  .onNotification(methods.agent.session.cancel, async ({ params }) => {
    sessions.get(params.sessionId)?.abort?.abort();
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    const s = getSession(sessionId);
    const abort = new AbortController();
    s.abort = abort;
    const say = (sessionUpdate, text) =>
      client.notify(methods.client.session.update, { sessionId, update: { sessionUpdate, content: { type: "text", text } } });
    try {
      if (has("stderr")) process.stderr.write("fake-agent: stderr line 1\nfake-agent: stderr line 2\n");
      await say("agent_thought_chunk", "Thinking.");
      // Die mid-turn, after one update (the stdout write is flushed first).
      if (has("crash-on-prompt")) process.stdout.write("", () => process.exit(3));
      if (has("exit0-on-prompt")) process.stdout.write("", () => process.exit(0));
      if (has("crash-on-prompt") || has("exit0-on-prompt")) return new Promise(() => {});
      // Alive but mute (or deaf): the engine hears nothing more, and this turn never answers.
      if (has("close-stdout-on-prompt") || has("close-stdin-on-prompt")) {
        const fd = has("close-stdout-on-prompt") ? 1 : 0;
        process.on("uncaughtException", (e) => log({ kind: "uncaught", message: e.message }));
        setInterval(() => {}, 1 << 30);
        await new Promise((r) => process.stdout.write("", r));
        closeSync(fd);
        log({ kind: "closed-fd", fd });
        return new Promise(() => {});
      }
      // A permission request sent after the engine's session/cancel (one that crossed it on the wire).
      if (has("permission-after-cancel")) {
        const toolCallId = `late_${Date.now()}`;
        const call = { toolCallId, title: TOOL_NAME, kind: "other", status: "pending", rawInput: {},
          _meta: { claudeCode: { toolName: TOOL_NAME } } };
        await client.notify(methods.client.session.update, { sessionId, update: { sessionUpdate: "tool_call", ...call } });
        log({ kind: "waiting-for-cancel" });
        while (!abort.signal.aborted) await sleep(20);
        const options = OPTION_SETS.claude();
        const response = await client.request(methods.client.session.requestPermission, { sessionId, toolCall: call, options });
        log({ kind: "permission", request: { toolCall: call, options }, response });
        await client.notify(methods.client.session.update, { sessionId, update: { sessionUpdate: "tool_call_update", toolCallId, status: "failed" } });
        return { stopReason: "cancelled" };
      }

      if (has("slow") || has("many-chunks")) {
        // Chunks "chunk 0\n", "chunk 1\n", ...; `slow` waits between them and
        // stops early on session/cancel.
        for (let i = 0; i < CHUNKS; i++) {
          if (abort.signal.aborted) return { stopReason: "cancelled" };
          await say("agent_message_chunk", `chunk ${i}${PAD}\n`);
          // Progress in the log: a test sees the agent paused when the engine stops reading it.
          if (has("many-chunks") && (i + 1) % 100 === 0) log({ kind: "progress", chunks: i + 1 });
          if (has("slow")) await sleep(DELAY_MS);
        }
        return { stopReason: abort.signal.aborted ? "cancelled" : "end_turn" };
      }

      let reply = `echo: ${describePrompt(params.prompt)}`;
      if (has("mcp-call")) reply += `\n${await mcpCall(client, sessionId, s)}`;
      if (has("permission")) {
        const a = await toolWithPermission(client, sessionId, 1, TOOL_NAME, "other", { query: "x" });
        const b = await toolWithPermission(client, sessionId, 2, "Bash", "execute", { command: "rm -rf /" });
        reply += `\npermissions: ${TOOL_NAME}=${a} Bash=${b}`;
      }
      for (const p of pieces(reply)) {
        if (abort.signal.aborted) return { stopReason: "cancelled" };
        await say("agent_message_chunk", p);
      }
      return { stopReason: abort.signal.aborted ? "cancelled" : "end_turn" };
    } finally {
      if (s.abort === abort) s.abort = null;
    }
  });

const conn = app.connect(tapped);
// The real Claude adapter exits when stdin closes; so do we, unless told not to.
conn.closed.then(() => {
  log({ kind: "stdin-closed" });
  if (!has("stay-after-stdin-close") && !has("ignore-sigterm") && !has("close-stdin-on-prompt") &&
      !has("close-stdout-on-prompt")) process.exit(0);
});
