// Self-checks for the fakes in this folder (not part of the engine's e2e run):
//   node --test tests/fakes/fakes.check.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/unstable";
import { startOpenAiServer } from "./openai-server.mjs";
import { startAnthropicServer } from "./anthropic-server.mjs";
import { startGeminiServer } from "./gemini-server.mjs";

const AGENT = new URL("./acp-agent.mjs", import.meta.url).pathname;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts the fake agent with env; returns helpers around an SDK client connection. */
function startFake(env = {}, { permission = (p) => ({ outcome: { outcome: "selected", optionId: p.options.find((o) => o.kind === "allow_once").optionId } }) } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "fake-acp-"));
  const logFile = join(dir, "log.jsonl");
  const child = spawn(AGENT, [], { cwd: dir, env: { ...process.env, FAKE_ACP_LOG: logFile, ...env }, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
  const updates = [];
  const app = client({ name: "fake-check" })
    .onNotification(methods.client.session.update, ({ params }) => { updates.push(params.update); })
    .onRequest(methods.client.session.requestPermission, ({ params }) => permission(params));
  const conn = app.connect(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  const log = () => existsSync(logFile) ? readFileSync(logFile, "utf8").trim().split("\n").map((l) => JSON.parse(l)) : [];
  return { child, dir, agent: conn.agent, updates, exited, log, stderr: () => stderr };
}
const text = (updates, kind = "agent_message_chunk") => updates.filter((u) => u.sessionUpdate === kind).map((u) => u.content.text).join("");

async function open(f) {
  const init = await f.agent.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const s = await f.agent.request(methods.agent.session.new, { cwd: f.dir, mcpServers: [{ type: "http", name: "webmcp", url: "http://127.0.0.1:1/mcp", headers: [] }] });
  return { init, s };
}

test("fake ACP agent: default echo, thought, image tag, log", async () => {
  const f = startFake();
  const { init, s } = await open(f);
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.promptCapabilities.image, true);
  assert.equal(init.agentCapabilities.mcpCapabilities.http, true);
  const r = await f.agent.request(methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [
    { type: "text", text: "hello" }, { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }, { type: "text", text: "world" },
  ] });
  assert.equal(r.stopReason, "end_turn");
  assert.equal(text(f.updates, "agent_thought_chunk"), "Thinking.");
  assert.equal(text(f.updates), "echo: hello\n[image image/png]\nworld");
  assert.ok(f.updates.filter((u) => u.sessionUpdate === "agent_message_chunk").length > 1);
  f.child.stdin.end();
  assert.deepEqual(await f.exited, { code: 0, signal: null });
  const kinds = f.log().map((e) => e.kind);
  assert.deepEqual(kinds, ["start", "initialize", "session/new", "prompt", "stdin-closed"]);
  const start = f.log()[0];
  assert.equal(start.pid, f.child.pid);
  assert.ok(start.env.includes("FAKE_ACP_LOG") && Number.isInteger(start.pgid));
  assert.equal(f.log()[2].params.mcpServers[0].name, "webmcp");
});

test("fake ACP agent: capability knobs", async () => {
  const f = startFake({ FAKE_ACP_MODE: "no-images,no-http-mcp" });
  const { init } = await open(f);
  assert.equal(init.agentCapabilities.promptCapabilities.image, false);
  assert.equal(init.agentCapabilities.mcpCapabilities.http, false);
  f.child.kill("SIGKILL");
});

for (const [style, allowId] of [["claude", "allow-once"], ["old", "allow"], ["gemini", "proceed_once"]]) {
  test(`fake ACP agent: permission (${style} option ids)`, async () => {
    // Client policy: allow webmcp tools, reject the rest, choosing by kind.
    const f = startFake({ FAKE_ACP_MODE: "permission", FAKE_ACP_OPTION_STYLE: style }, {
      permission: (p) => {
        const allow = p.toolCall.title.includes("webmcp");
        const opt = p.options.find((o) => o.kind === (allow ? "allow_once" : "reject_once"));
        return { outcome: { outcome: "selected", optionId: opt.optionId } };
      },
    });
    const { s } = await open(f);
    const r = await f.agent.request(methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: "go" }] });
    assert.equal(r.stopReason, "end_turn");
    const rejectId = style === "gemini" ? "cancel" : "reject";
    assert.equal(text(f.updates), `echo: go\npermissions: mcp__webmcp__lookup=${allowId} Bash=${rejectId}`);
    const statuses = f.updates.filter((u) => u.sessionUpdate === "tool_call_update").map((u) => u.status);
    assert.deepEqual(statuses, ["completed", "failed"]);
    assert.equal(f.log().filter((e) => e.kind === "permission").length, 2);
    f.child.kill("SIGKILL");
  });
}

test("fake ACP agent: slow + cancel", async () => {
  const f = startFake({ FAKE_ACP_MODE: "slow", FAKE_ACP_DELAY_MS: "50", FAKE_ACP_CHUNKS: "100" });
  const { s } = await open(f);
  const p = f.agent.request(methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: "x" }] });
  await sleep(300);
  await f.agent.notify(methods.agent.session.cancel, { sessionId: s.sessionId });
  assert.equal((await p).stopReason, "cancelled");
  const n = f.updates.filter((u) => u.sessionUpdate === "agent_message_chunk").length;
  assert.ok(n > 1 && n < 100, String(n));
  assert.ok(f.log().some((e) => e.kind === "cancel"));
  f.child.kill("SIGKILL");
});

test("fake ACP agent: modes, models, config options", async () => {
  const f = startFake({ FAKE_ACP_MODE: "modes,models", FAKE_ACP_CONFIG_OPTIONS: "1" });
  const { s } = await open(f);
  assert.equal(s.modes.currentModeId, "auto");
  assert.deepEqual(s.models.availableModels.map((m) => m.modelId), ["small", "big"]);
  assert.equal(s.configOptions[0].id, "model");
  assert.deepEqual(await f.agent.request(methods.agent.session.setMode, { sessionId: s.sessionId, modeId: "default" }), {});
  assert.deepEqual(await f.agent.request("session/set_model", { sessionId: s.sessionId, modelId: "big" }), {});
  const c = await f.agent.request(methods.agent.session.setConfigOption, { sessionId: s.sessionId, configId: "model", value: "small" });
  assert.equal(c.configOptions[0].currentValue, "small");
  assert.deepEqual(f.log().map((e) => e.kind).slice(3), ["set_mode", "set_model", "set_config_option"]);
  f.child.kill("SIGKILL");
});

test("fake ACP agent: crash-on-prompt exits 3, exit-on-start exits 5", async () => {
  const f = startFake({ FAKE_ACP_MODE: "crash-on-prompt" });
  const { s } = await open(f);
  await assert.rejects(f.agent.request(methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: "x" }] }));
  assert.equal((await f.exited).code, 3);
  const g = startFake({ FAKE_ACP_MODE: "exit-on-start" });
  assert.equal((await g.exited).code, 5);
});

test("fake ACP agent: ignore-sigterm needs SIGKILL; stay-after-stdin-close exits on SIGTERM", async () => {
  const f = startFake({ FAKE_ACP_MODE: "ignore-sigterm" });
  await open(f);
  f.child.stdin.end();
  await sleep(200);
  f.child.kill("SIGTERM");
  await sleep(300);
  assert.equal(f.child.exitCode, null);
  f.child.kill("SIGKILL");
  assert.equal((await f.exited).signal, "SIGKILL");
  const g = startFake({ FAKE_ACP_MODE: "stay-after-stdin-close" });
  await open(g);
  g.child.stdin.end();
  await sleep(300);
  assert.equal(g.child.exitCode, null);
  g.child.kill("SIGTERM");
  assert.equal((await g.exited).signal, "SIGTERM");
});

test("fake ACP agent: spawn-grandchild, write-files, stderr, garbage", async () => {
  const f = startFake({ FAKE_ACP_MODE: "spawn-grandchild,write-files,stderr" });
  const { s } = await open(f);
  await f.agent.request(methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: "x" }] });
  const start = f.log()[0];
  assert.ok(start.grandchildPid > 0);
  process.kill(start.grandchildPid, 0); // alive
  assert.ok(existsSync(join(f.dir, "fake-agent-was-here.txt")));
  assert.match(f.stderr(), /stderr line 1\n.*stderr line 2/);
  f.child.kill("SIGKILL");
  process.kill(start.grandchildPid, "SIGKILL");
  // garbage: raw stdout starts with non-JSON lines, then real JSON-RPC follows.
  const g = spawn(AGENT, [], { env: { ...process.env, FAKE_ACP_MODE: "garbage" }, stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  g.stdout.on("data", (d) => (out += d));
  g.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }) + "\n");
  await sleep(500);
  const lines = out.trim().split("\n");
  assert.equal(lines[0], "this is not JSON");
  assert.equal(JSON.parse(lines.at(-1)).id, 1);
  g.kill("SIGKILL");
});

test("openai server: streaming text, reasoning, tool call deltas, errors", async () => {
  const srv = await startOpenAiServer({ script: [
    { text: "Hello there", reasoning: "hmm" },
    { toolCalls: [{ name: "lookup", arguments: { q: "cats", n: 2 } }] },
    { status: 500 },
  ] });
  const post = (body) => fetch(`${srv.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer k" }, body: JSON.stringify(body) });
  const frames = async (res) => (await res.text()).split("\n\n").filter(Boolean).map((f) => f.slice(6));
  let fr = await frames(await post({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }));
  assert.equal(fr.at(-1), "[DONE]");
  const chunks = fr.slice(0, -1).map((f) => JSON.parse(f));
  assert.equal(chunks.map((c) => c.choices[0].delta.content ?? "").join(""), "Hello there");
  assert.equal(chunks.map((c) => c.choices[0].delta.reasoning_content ?? "").join(""), "hmm");
  assert.equal(chunks.at(-1).choices[0].finish_reason, "stop");
  fr = await frames(await post({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }));
  const tc = fr.slice(0, -1).map((f) => JSON.parse(f).choices[0]).filter((c) => c.delta.tool_calls);
  assert.equal(tc[0].delta.tool_calls[0].function.name, "lookup");
  assert.ok(tc.length > 2);
  assert.deepEqual(JSON.parse(tc.map((c) => c.delta.tool_calls[0].function.arguments).join("")), { q: "cats", n: 2 });
  assert.equal(JSON.parse(fr.at(-2)).choices[0].finish_reason, "tool_calls");
  assert.equal((await post({ model: "m", stream: true, messages: [] })).status, 500);
  const nonStream = await (await post({ model: "m", messages: [{ role: "user", content: "yo" }] })).json();
  assert.equal(nonStream.choices[0].message.content, "echo: yo");
  assert.equal((await (await fetch(`${srv.url}/models`)).json()).data[0].id, "scripted-model");
  assert.equal(srv.requests[0].headers.authorization, "Bearer k");
  await srv.close();
});

test("openai server: breakStream closes the socket mid-stream", async () => {
  const srv = await startOpenAiServer({ respond: () => ({ text: "a long answer that breaks", breakStream: true }) });
  const res = await fetch(`${srv.url}/chat/completions`, { method: "POST", body: JSON.stringify({ stream: true, messages: [] }) });
  await assert.rejects(res.text());
  await srv.close();
});

test("anthropic + gemini servers answer their side calls", async () => {
  const a = await startAnthropicServer({ reply: "hi" });
  const post = (body) => fetch(`${a.url}/v1/messages?beta=true`, { method: "POST", body: JSON.stringify(body) }).then((r) => r.text());
  const turn = await post({ model: "m", stream: true, messages: [{ role: "user", content: "Say hello" }] });
  assert.match(turn, /^event: message_start\n/);
  assert.match(turn, /"type":"text_delta","text":"hi"/);
  assert.match(turn, /event: message_stop\n/);
  const title = await post({ model: "m", stream: true, output_config: { format: { type: "json_schema", schema: { type: "object", properties: { title: { type: "string" } } } } }, messages: [{ role: "user", content: "x" }] });
  const deltas = (sse) => sse.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)))
    .filter((e) => e.delta?.type === "text_delta").map((e) => e.delta.text).join("");
  assert.deepEqual(JSON.parse(deltas(title)), { title: "Scripted title" });
  assert.deepEqual(a.requests.map((r) => r.kind), ["turn", "title"]);
  await a.close();
  const g = await startGeminiServer({ reply: "hey" });
  const sse = await fetch(`${g.url}/v1beta/models/gemini-x:streamGenerateContent?alt=sse`, { method: "POST", body: JSON.stringify({ contents: [] }) }).then((r) => r.text());
  const last = JSON.parse(sse.trim().split("\r\n\r\n").at(-1).slice(6));
  assert.equal(last.candidates[0].finishReason, "STOP");
  const routed = await fetch(`${g.url}/v1beta/models/flash:generateContent`, { method: "POST", body: JSON.stringify({ generationConfig: { responseJsonSchema: { type: "OBJECT", properties: { complexity_reasoning: { type: "STRING" }, complexity_score: { type: "INTEGER" } } } } }) }).then((r) => r.json());
  assert.equal(JSON.parse(routed.candidates[0].content.parts[0].text).complexity_score, 10);
  await g.close();
});

test("fake ACP agent: mcp-call over HTTP (SDK MCP server) and over stdio; a failed call or an MCP error → tool error", async (t) => {
  const http = await import("node:http");
  const { Server } = await import("@modelcontextprotocol/sdk/server/index.js");
  const { StreamableHTTPServerTransport } = await import("@modelcontextprotocol/sdk/server/streamableHttp.js");
  const { ListToolsRequestSchema, CallToolRequestSchema, McpError } = await import("@modelcontextprotocol/sdk/types.js");
  const auths = [];
  const srv = http.createServer(async (req, res) => {
    auths.push(req.headers.authorization);
    if (req.method !== "POST") return res.writeHead(405).end();
    const server = new Server({ name: "webmcp", version: "1" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "lookup", inputSchema: { type: "object" } }] }));
    server.setRequestHandler(CallToolRequestSchema, async (r) => {
      // As the engine answers: a page's error is a failed call (isError); a page gone before the call, an MCP error.
      if (r.params.arguments.query === "fail") return { content: [{ type: "text", text: "The catalog is offline." }], isError: true };
      if (r.params.arguments.query === "offline") throw new McpError(-32001, "The page is not connected");
      return { content: [{ type: "text", text: `found ${r.params.arguments.query}` }], isError: false };
    });
    const tr = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(tr);
    await tr.handleRequest(req, res);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => srv.close(r)));
  const url = `http://127.0.0.1:${srv.address().port}/mcp`;

  const run = async (env, mcpServers) => {
    const f = startFake({ FAKE_ACP_MODE: "mcp-call", ...env });
    await f.agent.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const s = await f.agent.request(methods.agent.session.new, { cwd: f.dir, mcpServers });
    await f.agent.request(methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: "go" }] });
    f.child.stdin.end();
    await f.exited;
    return f;
  };
  const httpEntry = [{ type: "http", name: "webmcp", url, headers: [{ name: "Authorization", value: "Bearer abc" }] }];
  const a = await run({ FAKE_ACP_CALL_ARGS: '{"query":"mug"}' }, httpEntry);
  assert.equal(text(a.updates), "echo: go\ntool result: found mug", a.stderr());
  assert.ok(auths.length && auths.every((h) => h === "Bearer abc"), JSON.stringify(auths));
  const tc = a.updates.find((u) => u.sessionUpdate === "tool_call");
  assert.equal(tc.title, "mcp__webmcp__lookup");
  assert.deepEqual(tc._meta, { claudeCode: { toolName: "mcp__webmcp__lookup" } });
  assert.equal(a.updates.filter((u) => u.sessionUpdate === "tool_call_update").at(-1).status, "completed");
  assert.deepEqual(a.log().find((e) => e.kind === "mcp-tools").tools.map((x) => x.name), ["lookup"]);

  const b = await run({ FAKE_ACP_CALL_ARGS: '{"query":"fail"}' }, httpEntry);
  assert.equal(text(b.updates), "echo: go\ntool error: The catalog is offline.");
  assert.equal(b.updates.filter((u) => u.sessionUpdate === "tool_call_update").at(-1).status, "failed");
  const gone = await run({ FAKE_ACP_CALL_ARGS: '{"query":"offline"}' }, httpEntry);
  assert.match(text(gone.updates), /^echo: go\ntool error: MCP error -32001: .*The page is not connected$/);

  // stdio: a tiny MCP stdio server that checks its env
  const dir = mkdtempSync(join(tmpdir(), "fake-mcp-stdio-"));
  const script = join(dir, "server.mjs");
  const sdk = new URL("../../node_modules/@modelcontextprotocol/sdk/dist/esm/", import.meta.url).href;
  (await import("node:fs")).writeFileSync(script, `
import { Server } from "${sdk}server/index.js";
import { StdioServerTransport } from "${sdk}server/stdio.js";
import { ListToolsRequestSchema, CallToolRequestSchema } from "${sdk}types.js";
const server = new Server({ name: "webmcp", version: "1" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "lookup", inputSchema: { type: "object" } }] }));
server.setRequestHandler(CallToolRequestSchema, async (r) => ({ content: [{ type: "text", text: "stdio " + process.env.LEURIA_MCP_TOKEN + " " + process.argv[2] }] }));
await server.connect(new StdioServerTransport());
`);
  const c = await run({}, [{ name: "webmcp", command: process.execPath, args: [script, "arg1"], env: [{ name: "LEURIA_MCP_TOKEN", value: "tok" }] }]);
  assert.equal(text(c.updates), "echo: go\ntool result: stdio tok arg1", c.stderr());
  assert.equal(c.log().find((e) => e.kind === "mcp-tools").transport, "stdio");
});
