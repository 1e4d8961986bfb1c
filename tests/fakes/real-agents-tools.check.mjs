// Checks the tool-call scripts of the scripted model APIs (opts.toolCall) against the REAL agents, without
// the engine: each agent gets an `http` MCP server `webmcp` (the SDK's own server, on loopback) with one tool
// `lookup`, the scripted API asks for it, and the second answer must quote the tool's result.
//   node --test tests/fakes/real-agents-tools.check.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/unstable";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ListToolsRequestSchema, CallToolRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startAnthropicServer } from "./anthropic-server.mjs";
import { startGeminiServer } from "./gemini-server.mjs";
import { claudeAgentSpec, claudeSessionMeta, geminiAgentSpec } from "./real-agents.mjs";

const RESULT = "The Celadon mug costs 24 euros.";

/** A stateless MCP server `webmcp` with tool `lookup`, requiring `Authorization: Bearer secret`. */
async function startMcp() {
  const calls = [];
  const srv = http.createServer(async (req, res) => {
    if (req.headers.authorization !== "Bearer secret") { res.writeHead(401).end(); return; }
    if (req.method !== "POST") { res.writeHead(405).end(); return; }
    const server = new Server({ name: "webmcp", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: "lookup", description: "Look a product up.", inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (r) => {
      calls.push(r.params);
      return { content: [{ type: "text", text: RESULT }], isError: false };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}/mcp`, calls, close: () => new Promise((r) => srv.close(r)) };
}

async function runToolTurn(spec, mcp, { sessionMeta, afterNew } = {}) {
  const cwd = mkdtempSync(join(tmpdir(), "leuria-check-"));
  const child = spawn(spec.command, spec.args, { cwd, env: spec.env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
  const seen = { updates: [], permissions: [], stderr: () => stderr };
  const app = client({ name: "leuria-real-agent-tools-check" })
    .onNotification(methods.client.session.update, ({ params }) => { seen.updates.push(params.update); })
    .onNotification("*", () => {})
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
      seen.permissions.push(params);
      const once = params.options.find((o) => o.kind === "allow_once");
      return { outcome: { outcome: "selected", optionId: once.optionId } };
    })
    .onRequest("*", () => ({}));
  try {
    await app.connectWith(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)), async (agent) => {
      await agent.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
      const mcpServers = [{ type: "http", name: "webmcp", url: mcp.url, headers: [{ name: "Authorization", value: "Bearer secret" }] }];
      seen.session = await agent.request(methods.agent.session.new, { cwd, mcpServers, ...(sessionMeta ? { _meta: sessionMeta } : {}) });
      if (afterNew) await afterNew(agent, seen.session);
      seen.result = await agent.request(methods.agent.session.prompt, { sessionId: seen.session.sessionId, prompt: [{ type: "text", text: "Look up the mug" }] });
    });
  } finally {
    child.stdin.end();
    const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
    seen.exit = await exited;
    clearTimeout(t);
    rmSync(cwd, { recursive: true, force: true });
  }
  seen.text = seen.updates.filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" && u.content?._meta?.claudeCode?.kind !== "informational" && u._meta?.claudeCode?.kind !== "informational").map((u) => u.content.text).join("");
  return seen;
}

test("Gemini CLI calls mcp_webmcp_lookup when the scripted API asks, and the second answer quotes its result", { timeout: 120_000 }, async (t) => {
  const api = await startGeminiServer({ toolCall: { name: "mcp_webmcp_lookup", args: { query: "mug" } } });
  const mcp = await startMcp();
  const home = mkdtempSync(join(tmpdir(), "leuria-gemini-home-"));
  t.after(async () => { await api.close(); await mcp.close(); rmSync(home, { recursive: true, force: true }); });
  const seen = await runToolTurn(geminiAgentSpec({ apiUrl: api.url, home }), mcp, {
    afterNew: (agent, s) => agent.request("session/set_mode", { sessionId: s.sessionId, modeId: "default" }),
  });
  const turns = api.requests.filter((r) => r.kind === "turn");
  t.diagnostic(`offered: ${JSON.stringify(turns[0]?.offeredTools)}; permissions: ${JSON.stringify(seen.permissions.map((p) => p.toolCall.title))}`);
  assert.deepEqual(mcp.calls.map((c) => ({ name: c.name, arguments: c.arguments })), [{ name: "lookup", arguments: { query: "mug" } }], seen.stderr().slice(-3000));
  assert.ok(turns.some((r) => r.toolResults?.some((x) => x.text.includes(RESULT))), JSON.stringify(turns.map((r) => r.toolResults)));
  assert.ok(seen.text.includes(RESULT), seen.text);
});

test("Claude Code's adapter calls mcp__webmcp__lookup when the scripted API asks, and the second answer quotes its result", { timeout: 180_000 }, async (t) => {
  const api = await startAnthropicServer({ toolCall: { name: "mcp__webmcp__lookup", input: { query: "mug" } } });
  const mcp = await startMcp();
  const home = mkdtempSync(join(tmpdir(), "leuria-claude-home-"));
  t.after(async () => { await api.close(); await mcp.close(); rmSync(home, { recursive: true, force: true }); });
  const meta = claudeSessionMeta();
  meta.claudeCode.options.allowedTools = []; // so the call asks session/request_permission
  const seen = await runToolTurn(claudeAgentSpec({ apiUrl: api.url, home }), mcp, {
    sessionMeta: meta,
    afterNew: (agent, s) => agent.request("session/set_mode", { sessionId: s.sessionId, modeId: "default" }),
  });
  const turns = api.requests.filter((r) => r.kind === "turn");
  t.diagnostic(`offered: ${JSON.stringify(turns[0]?.offeredTools)}; permissions: ${JSON.stringify(seen.permissions.map((p) => [p.toolCall.title, p.toolCall._meta]))}`);
  assert.deepEqual(mcp.calls.map((c) => ({ name: c.name, arguments: c.arguments })), [{ name: "lookup", arguments: { query: "mug" } }], seen.stderr().slice(-3000));
  assert.ok(turns.some((r) => r.toolResults?.some((x) => x.text.includes(RESULT))), JSON.stringify(turns.map((r) => r.toolResults)));
  assert.ok(seen.text.includes(RESULT), seen.text);
});
