// Checks that the REAL agents (pinned in package.json) run offline against the
// scripted model APIs, using the launch specs in real-agents.mjs.
//   node --test tests/fakes/real-agents.check.mjs
// (Named *.check.mjs so the engine's e2e glob does not pick it up.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/unstable";
import { startAnthropicServer } from "./anthropic-server.mjs";
import { startGeminiServer } from "./gemini-server.mjs";
import { claudeAgentSpec, claudeSessionMeta, geminiAgentSpec } from "./real-agents.mjs";

const REPLY = "Hello from the scripted model.";

/**
 * Spawns the agent from `spec`, runs initialize → session/new → (setup) →
 * session/prompt "Say hello", and returns everything observed.
 */
async function runTurn(spec, { sessionMeta, afterNew } = {}) {
  const cwd = mkdtempSync(join(tmpdir(), "leuria-check-"));
  const child = spawn(spec.command, spec.args, { cwd, env: spec.env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
  const seen = { updates: [], notifications: [], requests: [], stderr: () => stderr };
  const app = client({ name: "leuria-real-agent-check" })
    .onNotification(methods.client.session.update, ({ params }) => { seen.updates.push(params.update); })
    .onNotification("*", ({ method, params }) => { seen.notifications.push({ method, params }); })
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
      seen.requests.push({ method: "session/request_permission", params });
      return { outcome: { outcome: "cancelled" } };
    })
    .onRequest("*", ({ method, params }) => { seen.requests.push({ method, params }); return {}; });
  const stream = ndJson(child);
  try {
    await app.connectWith(stream, async (agent) => {
      seen.init = await agent.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
      seen.session = await agent.request(methods.agent.session.new, { cwd, mcpServers: [], ...(sessionMeta ? { _meta: sessionMeta } : {}) });
      if (afterNew) seen.afterNew = await afterNew(agent, seen.session);
      const before = seen.updates.length;
      seen.result = await agent.request(methods.agent.session.prompt, { sessionId: seen.session.sessionId, prompt: [{ type: "text", text: "Say hello" }] });
      seen.turnUpdates = seen.updates.slice(before);
      await new Promise((r) => setTimeout(r, 1500)); // let post-turn side calls happen
    });
  } finally {
    child.stdin.end(); // both real agents exit when stdin closes
    const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
    seen.exit = await exited;
    clearTimeout(t);
    rmSync(cwd, { recursive: true, force: true });
  }
  return seen;
}

function ndJson(child) {
  return ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
}

const messageText = (updates) => updates
  .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text")
  .map((u) => u.content.text).join("");

/** Calls a method and reports {ok} or {code, message} instead of throwing. */
async function tryRequest(agent, method, params) {
  try { return { ok: await agent.request(method, params) }; }
  catch (e) { return { code: e.code, message: e.message }; }
}

test("Gemini CLI runs offline against the scripted Gemini API", { timeout: 120_000 }, async (t) => {
  const api = await startGeminiServer({ reply: REPLY });
  const home = mkdtempSync(join(tmpdir(), "leuria-gemini-home-"));
  t.after(async () => { await api.close(); rmSync(home, { recursive: true, force: true }); });
  const seen = await runTurn(geminiAgentSpec({ apiUrl: api.url, home }), {
    afterNew: async (agent, s) => ({
      setMode: await tryRequest(agent, "session/set_mode", { sessionId: s.sessionId, modeId: "default" }),
      setModel: await tryRequest(agent, "session/set_model", { sessionId: s.sessionId, modelId: "gemini-2.5-pro" }),
      setConfig: await tryRequest(agent, "session/set_config_option", { sessionId: s.sessionId, configId: "model", value: "gemini-2.5-pro" }),
    }),
  });
  assert.equal(seen.init.protocolVersion, 1);
  assert.equal(seen.init.agentCapabilities.mcpCapabilities.http, true);
  assert.equal(seen.session.modes.currentModeId, "default");
  assert.ok(seen.session.models.availableModels.length > 0);
  assert.deepEqual(seen.afterNew.setMode, { ok: {} });
  assert.deepEqual(seen.afterNew.setModel, { ok: {} });
  assert.equal(seen.afterNew.setConfig.code, -32601); // set_config_option: not supported
  assert.equal(messageText(seen.turnUpdates), REPLY, seen.stderr());
  assert.equal(seen.result.stopReason, "end_turn");
  assert.deepEqual(seen.exit, { code: 0, signal: null });
  // API calls: only the streamed turn. (With the default model "auto" a
  // routing call, a structured :generateContent, comes first; set_model to a
  // concrete model skips it.)
  const kinds = api.requests.map((r) => `${r.path.split(":")[1]}/${r.kind}`);
  assert.deepEqual(kinds, ["streamGenerateContent/turn"]);
  assert.equal(api.requests.at(-1).model, "gemini-2.5-pro"); // set_model took effect
  t.diagnostic(`updates: ${[...new Set(seen.updates.map((u) => u.sessionUpdate))].join(", ")}`);
  t.diagnostic(`other notifications: ${seen.notifications.map((n) => n.method).join(", ") || "none"}`);
});

test("Gemini CLI with its default model \"auto\" makes a routing call first", { timeout: 120_000 }, async (t) => {
  const api = await startGeminiServer({ reply: REPLY });
  const home = mkdtempSync(join(tmpdir(), "leuria-gemini-home-"));
  t.after(async () => { await api.close(); rmSync(home, { recursive: true, force: true }); });
  const seen = await runTurn(geminiAgentSpec({ apiUrl: api.url, home }));
  assert.equal(messageText(seen.turnUpdates), REPLY, seen.stderr());
  assert.equal(seen.result.stopReason, "end_turn");
  const kinds = api.requests.map((r) => `${r.path.split(":")[1]}/${r.kind}`);
  assert.deepEqual(kinds, ["generateContent/structured", "streamGenerateContent/turn"]);
  const schema = api.requests[0].body.generationConfig.responseJsonSchema;
  assert.deepEqual(Object.keys(schema.properties).sort(), ["complexity_reasoning", "complexity_score"]);
  t.diagnostic(`models: router ${api.requests[0].model}, turn ${api.requests[1].model}`);
});

test("Claude Code's ACP adapter runs offline against the scripted Anthropic API", { timeout: 180_000 }, async (t) => {
  const api = await startAnthropicServer({ reply: REPLY });
  const home = mkdtempSync(join(tmpdir(), "leuria-claude-home-"));
  t.after(async () => { await api.close(); rmSync(home, { recursive: true, force: true }); });
  const seen = await runTurn(claudeAgentSpec({ apiUrl: api.url, home }), {
    sessionMeta: claudeSessionMeta(),
    afterNew: async (agent, s) => ({
      setMode: await tryRequest(agent, "session/set_mode", { sessionId: s.sessionId, modeId: "default" }),
      setConfig: await tryRequest(agent, "session/set_config_option", { sessionId: s.sessionId, configId: "model", value: "sonnet" }),
      setModel: await tryRequest(agent, "session/set_model", { sessionId: s.sessionId, modelId: "sonnet" }),
    }),
  });
  assert.equal(seen.init.protocolVersion, 1);
  assert.equal(seen.init.agentCapabilities.mcpCapabilities.http, true);
  assert.equal(seen.session.modes.currentModeId, "auto"); // the adapter's default
  assert.ok(seen.session.modes.availableModes.some((m) => m.id === "default"));
  assert.deepEqual(seen.afterNew.setMode, { ok: {} });
  assert.ok(Array.isArray(seen.afterNew.setConfig.ok?.configOptions), JSON.stringify(seen.afterNew.setConfig));
  assert.equal(seen.afterNew.setModel.code, -32601); // session/set_model: not supported
  assert.equal(messageText(seen.turnUpdates), REPLY, seen.stderr());
  assert.equal(seen.result.stopReason, "end_turn");
  assert.deepEqual(seen.exit, { code: 0, signal: null });
  const turns = api.requests.filter((r) => r.kind === "turn");
  assert.equal(turns.length, 1);
  assert.deepEqual(turns[0].body.tools ?? [], []); // tools: [] turned the built-ins off
  assert.match(turns[0].body.model, /sonnet/); // set_config_option model took effect
  t.diagnostic(`api calls: ${api.requests.map((r) => `${r.method} ${r.path}?${new URLSearchParams(r.query)} (${r.kind})`).join("; ")}`);
  t.diagnostic(`updates: ${[...new Set(seen.updates.map((u) => u.sessionUpdate))].join(", ")}`);
  t.diagnostic(`other notifications: ${seen.notifications.map((n) => n.method).join(", ") || "none"}`);
});
