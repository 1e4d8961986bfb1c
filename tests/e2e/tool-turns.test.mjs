// Whole turns with a page tool call (issue 4, "Tests"): a page in Node pairs, prepares, registers its channel,
// declares `lookup`, opens the stream and approves with a prompt; the AI calls `lookup`, the page answers, and the
// answer flows back into the turn. Through (a) the scripted ACP agent (`mcp-call`, over HTTP MCP and over the
// `leuria mcp-stdio` bridge), (b) the scripted OpenAI-compatible server with the engine's own tool loop,
// (c) the real Gemini CLI and (d) the real Claude Code adapter, each with a scripted model API.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import {
  startEngine, startFakeEngine, stopAll, makeHome, sleep, poll, pageSession, mcpUrl, BIN,
} from './helpers.mjs';
import { startOpenAiServer } from '../fakes/openai-server.mjs';
import { startGeminiServer } from '../fakes/gemini-server.mjs';
import { startAnthropicServer } from '../fakes/anthropic-server.mjs';
import { geminiAgentSpec, claudeAgentSpec, GEMINI_BIN, CLAUDE_ACP_BIN } from '../fakes/real-agents.mjs';

const LOOKUP = {
  name: 'lookup',
  description: 'Look a product up in the shop. Returns its name and price.',
  inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};
const ANSWER = 'Celadon mug, 24 euros, 3 in stock';
const cleanups = [];

after(async () => {
  try {
    await stopAll();
  } finally {
    for (const c of cleanups) await c().catch(() => {});
  }
});

const events = (stream, name) => stream.events.filter((e) => e.event === name).map((e) => e.data);

/** Wait for turn_completed (or failed), with a diagnosis on failure. */
async function turnDone(eng, stream, ms, extra = () => '') {
  let ev;
  try {
    ev = await stream.waitFor((e) => e.event === 'turn_completed' || e.event === 'failed', ms);
  } catch (e) {
    ev = { event: 'timeout', data: e.message.slice(0, 300) };
  }
  if (ev.event !== 'turn_completed') {
    await sleep(200);
    const logs = events(stream, 'log');
    throw new Error(`no turn_completed (${ev.event}: ${JSON.stringify(ev.data)})\nevents: ${JSON.stringify(stream.names())}\n` +
      `tool_call: ${JSON.stringify(events(stream, 'tool_call'))}\npermission: ${JSON.stringify(events(stream, 'permission'))}\n` +
      `agent log (last 20):\n${logs.slice(-20).join('\n')}\n${extra()}\nengine stderr:\n${eng.stderrLines.slice(-15).join('\n')}\nengine exit: ${JSON.stringify(eng.exitInfo)}`);
  }
  return ev;
}

/** Page-side checks common to every path: one callTool for lookup with the AI's arguments. */
function assertPageCall(page, args = { query: 'mug' }) {
  const calls = page.calls;
  assert.equal(calls.length, 1, `the page saw one callTool: ${JSON.stringify(page.messages)}`);
  assert.equal(calls[0].tool, 'lookup');
  assert.deepEqual(calls[0].arguments, args);
}

/** tool_call events name the page tool mcp__webmcp__lookup. */
function assertToolCallEvents(stream) {
  const calls = events(stream, 'tool_call');
  assert.ok(calls.some((c) => c.toolName === 'mcp__webmcp__lookup'), `tool_call events: ${JSON.stringify(calls)}`);
}

describe('whole turns with a page tool call', { timeout: 300000 }, () => {
  describe('(a) the scripted ACP agent in mcp-call mode', () => {
    for (const style of ['claude', 'old', 'gemini']) {
      it(`over HTTP MCP (${style} option ids): session/new names webmcp with the bearer; the page answers; the reply quotes it`, async () => {
        const eng = await startFakeEngine({
          mode: 'mcp-call',
          env: { FAKE_ACP_CALL_TOOL: 'lookup', FAKE_ACP_CALL_ARGS: JSON.stringify({ query: 'mug' }), FAKE_ACP_OPTION_STYLE: style },
        });
        const { page, stream } = await pageSession(eng, { prompt: 'Find a mug', tools: [LOOKUP], handler: () => ANSWER });
        const tc = await turnDone(eng, stream, 15000, () => `agent log: ${JSON.stringify(eng.readLog().filter((e) => e.kind !== 'start')).slice(0, 3000)}`);
        assertPageCall(page);
        assert.ok(tc.data.text.includes(`tool result: ${ANSWER}`), tc.data.text);
        const [nw] = eng.readLog().filter((e) => e.kind === 'session/new');
        assert.deepEqual(nw.params.mcpServers, [{
          type: 'http', name: 'webmcp', url: mcpUrl(eng),
          headers: [{ name: 'Authorization', value: `Bearer ${page.token}` }],
        }]);
        const listed = eng.readLog().find((e) => e.kind === 'mcp-tools');
        assert.deepEqual(listed.tools.map((t) => t.name), ['lookup']);
        assert.deepEqual(listed.tools[0].inputSchema, LOOKUP.inputSchema);
        const perms = events(stream, 'permission');
        assert.deepEqual(perms, [{ toolName: 'mcp__webmcp__lookup', allow: true }]);
        const answered = eng.readLog().find((e) => e.kind === 'permission');
        const chosen = answered.request.options.find((o) => o.optionId === answered.response.outcome.optionId);
        assert.equal(chosen?.kind, 'allow_once', `allowed once, never always: ${JSON.stringify(answered.response)}`);
        if (style !== 'gemini') assertToolCallEvents(stream);
      });
    }

    it('a page error reaches the agent as a failed tool call; an object result as JSON text', async () => {
      const eng = await startFakeEngine({ mode: 'mcp-call', env: { FAKE_ACP_CALL_ARGS: JSON.stringify({ query: 'x' }) } });
      let n = 0;
      const { api, sid, page, stream } = await pageSession(eng, {
        prompt: 'first',
        tools: [LOOKUP],
        handler: () => (n++ === 0 ? { error: 'The catalog is offline.' } : { name: 'Celadon mug', price: 24 }),
      });
      const tc1 = await turnDone(eng, stream, 15000);
      assert.match(tc1.data.text, /tool error: .*The catalog is offline\./, tc1.data.text);
      const mcpErr = eng.readLog().find((e) => e.kind === 'mcp-call');
      assert.deepEqual(mcpErr.result, { content: [{ type: 'text', text: 'The catalog is offline.' }], isError: true }, JSON.stringify(mcpErr));
      assert.equal((await api.prompt(sid, { prompt: 'second' })).status, 200);
      const tc2 = await stream.waitFor((e) => e.event === 'turn_completed' && e.data.text.includes('second'), 15000);
      const line = tc2.data.text.split('\n').find((l) => l.startsWith('tool result: '));
      assert.ok(line, tc2.data.text);
      assert.deepEqual(JSON.parse(line.slice('tool result: '.length)), { name: 'Celadon mug', price: 24 });
      assert.equal(page.calls.length, 2);
    });

    it('an agent without HTTP MCP (no-http-mcp) gets `leuria mcp-stdio <url>` with LEURIA_MCP_TOKEN, and the call goes through it', async () => {
      const eng = await startFakeEngine({ mode: 'mcp-call,no-http-mcp', env: { FAKE_ACP_CALL_ARGS: JSON.stringify({ query: 'mug' }) } });
      const { page, stream } = await pageSession(eng, { prompt: 'Find a mug', tools: [LOOKUP], handler: () => ANSWER });
      const tc = await turnDone(eng, stream, 15000, () => `agent log: ${JSON.stringify(eng.readLog().filter((e) => e.kind !== 'start')).slice(0, 3000)}`);
      const [nw] = eng.readLog().filter((e) => e.kind === 'session/new');
      assert.equal(nw.params.mcpServers.length, 1, JSON.stringify(nw.params.mcpServers));
      const m = nw.params.mcpServers[0];
      assert.equal(m.name, 'webmcp');
      assert.ok(!m.url && (m.type === undefined || m.type === 'stdio'), JSON.stringify(m));
      assert.ok(path.isAbsolute(m.command), `absolute command: ${m.command}`);
      assert.equal(fs.realpathSync(m.command), fs.realpathSync(BIN), 'the engine\'s own binary');
      assert.deepEqual(m.args, ['mcp-stdio', mcpUrl(eng)]);
      assert.deepEqual(m.env, [{ name: 'LEURIA_MCP_TOKEN', value: page.token }]);
      assertPageCall(page);
      assert.ok(tc.data.text.includes(`tool result: ${ANSWER}`), tc.data.text);
      assert.equal(eng.readLog().find((e) => e.kind === 'mcp-tools')?.transport, 'stdio');
      assert.deepEqual(events(stream, 'permission'), [{ toolName: 'mcp__webmcp__lookup', allow: true }]);
    });

    it('a tool declared after approve, before the prompt, is there for the turn', async () => {
      const eng = await startFakeEngine({ mode: 'mcp-call', env: { FAKE_ACP_CALL_ARGS: JSON.stringify({ query: 'late' }) } });
      const { api, sid, page, stream } = await pageSession(eng, { tools: [], handler: () => 'late answer' });
      await stream.waitFor('ready', 10000);
      await page.registerTool(LOOKUP);
      assert.equal((await api.prompt(sid, { prompt: 'go' })).status, 200);
      const tc = await turnDone(eng, stream, 15000);
      assertPageCall(page, { query: 'late' });
      assert.ok(tc.data.text.includes('tool result: late answer'), tc.data.text);
    });
  });

  it('(b) the model backend: the scripted OpenAI server calls lookup, the engine calls the page in-process, the model gets the result', async () => {
    const srv = await startOpenAiServer({
      respond: (body, i) => {
        const toolMsg = body.messages.find((m) => m.role === 'tool');
        if (toolMsg) return { text: `The page said: ${toolMsg.content}` };
        const name = (body.tools || []).map((t) => t.function?.name).find((n) => n && n.endsWith('lookup'));
        if (!name) return { text: `no lookup tool offered: ${JSON.stringify(body.tools)}` };
        return { toolCalls: [{ name, arguments: { query: 'mug' } }] };
      },
    });
    cleanups.push(() => srv.close());
    const eng = await startEngine({
      files: { 'config.json': { agent: 'llm:fake' }, 'providers.json': { providers: [{ id: 'fake', kind: 'openai', name: 'Fake', baseUrl: srv.url }] } },
    });
    const { page, stream } = await pageSession(eng, { prompt: 'Find a mug', tools: [LOOKUP], handler: () => ANSWER });
    const tc = await turnDone(eng, stream, 15000, () => `requests: ${JSON.stringify(srv.requests.map((r) => r.body?.messages)).slice(0, 3000)}`);
    assertPageCall(page);
    const chats = srv.requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions');
    assert.equal(chats.length, 2, `two model requests: ${chats.length}`);
    const fn = chats[0].body.tools?.find((t) => t.function?.name?.endsWith('lookup'))?.function;
    assert.ok(fn, JSON.stringify(chats[0].body.tools));
    assert.equal(fn.description, LOOKUP.description);
    assert.deepEqual(fn.parameters, LOOKUP.inputSchema);
    const toolMsg = chats[1].body.messages.find((m) => m.role === 'tool');
    assert.equal(toolMsg.content, ANSWER, 'a string result reaches the model as is');
    assert.equal(tc.data.text, `The page said: ${ANSWER}`);
    assertToolCallEvents(stream);
    const statuses = events(stream, 'tool_call').filter((c) => c.toolName === 'mcp__webmcp__lookup').map((c) => c.status);
    assert.equal(statuses.at(-1), 'completed', JSON.stringify(statuses));
    for (const p of events(stream, 'permission')) assert.deepEqual(p, { toolName: 'mcp__webmcp__lookup', allow: true });
  });

  it('(b) the model backend: parallel calls without an index (Gemini\'s OpenAI layer) stay two calls, each by its id', async () => {
    const SKU = { name: 'sku', description: 'A product\'s SKU.', inputSchema: { type: 'object', properties: { query: { type: 'string' } } } };
    const sse = (obj) => `data: ${JSON.stringify(obj)}\n\n`;
    const chunk = (delta, finish = null) => sse({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
    const srv = await startOpenAiServer({
      respond: (body) => {
        const results = body.messages.filter((m) => m.role === 'tool');
        if (results.length) return { text: `Saw ${results.length}: ${results.map((m) => m.content).join(' | ')}` };
        const names = (body.tools || []).map((t) => t.function?.name);
        const lookup = names.find((n) => n?.endsWith('lookup'));
        const sku = names.find((n) => n?.endsWith('sku'));
        return {
          // As Gemini sends them: each call whole, with an id and no index, one chunk each.
          rawBody: chunk({ role: 'assistant', content: '' }) +
            chunk({ tool_calls: [{ id: 'g1', type: 'function', function: { name: lookup, arguments: '{"query":"mug"}' } }] }) +
            chunk({ tool_calls: [{ id: 'g2', type: 'function', function: { name: sku, arguments: '{"query":"cup"}' } }] }) +
            chunk({}, 'tool_calls') + 'data: [DONE]\n\n',
          contentType: 'text/event-stream',
        };
      },
    });
    cleanups.push(() => srv.close());
    const eng = await startEngine({
      files: { 'config.json': { agent: 'llm:fake' }, 'providers.json': { providers: [{ id: 'fake', kind: 'openai', name: 'Fake', baseUrl: srv.url }] } },
    });
    const { page, stream } = await pageSession(eng, { prompt: 'Find a mug and a cup', tools: [LOOKUP, SKU], handler: (m) => `${m.tool}:${m.arguments?.query}` });
    const tc = await turnDone(eng, stream, 15000);
    assert.deepEqual(page.calls.map((c) => [c.tool, c.arguments]), [['lookup', { query: 'mug' }], ['sku', { query: 'cup' }]], JSON.stringify(page.messages));
    const chats = srv.requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions');
    const asst = chats[1].body.messages.find((m) => m.role === 'assistant');
    assert.deepEqual(asst.tool_calls.map((c) => c.id), ['g1', 'g2']);
    assert.match(tc.data.text, /^Saw 2: /);
  });

  it('(b) the model backend: the last step\'s calls are not run, though the server sent them despite tool_choice "none"', async () => {
    const srv = await startOpenAiServer({ respond: () => ({ text: 'Let me look.', toolCalls: [{ name: 'lookup', arguments: { query: 'mug' } }] }) });
    cleanups.push(() => srv.close());
    const eng = await startEngine({
      files: { 'config.json': { agent: 'llm:fake' }, 'providers.json': { providers: [{ id: 'fake', kind: 'openai', name: 'Fake', baseUrl: srv.url }] } },
    });
    const { page, stream } = await pageSession(eng, { prompt: 'Find a mug', tools: [LOOKUP], handler: () => ANSWER, prepare: { maxTurns: 1 } });
    const tc = await turnDone(eng, stream, 15000);
    const chats = srv.requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions');
    assert.equal(chats.length, 1);
    assert.equal(chats[0].body.tool_choice, 'none', 'the one step asked for words only');
    assert.equal(page.calls.length, 0, `no callTool reached the page: ${JSON.stringify(page.messages)}`);
    assert.equal(events(stream, 'tool_call').length, 0, JSON.stringify(events(stream, 'tool_call')));
    assert.equal(tc.data.text, 'Let me look.');
  });

  it('(b) the model backend: a page error goes back to the model as a failed tool result', async () => {
    const srv = await startOpenAiServer({
      respond: (body) => {
        const toolMsg = body.messages.find((m) => m.role === 'tool');
        if (toolMsg) return { text: `Saw: ${toolMsg.content}` };
        return { toolCalls: [{ name: 'lookup', arguments: { query: 'mug' } }] };
      },
    });
    cleanups.push(() => srv.close());
    const eng = await startEngine({
      files: { 'config.json': { agent: 'llm:fake' }, 'providers.json': { providers: [{ id: 'fake', kind: 'openai', name: 'Fake', baseUrl: srv.url }] } },
    });
    const { page, stream } = await pageSession(eng, { prompt: 'Find a mug', tools: [LOOKUP], handler: () => ({ error: 'The catalog is offline.' }) });
    const tc = await turnDone(eng, stream, 15000);
    assertPageCall(page);
    assert.match(tc.data.text, /^Saw: .*The catalog is offline\./, tc.data.text);
    const statuses = events(stream, 'tool_call').filter((c) => c.toolName === 'mcp__webmcp__lookup').map((c) => c.status);
    assert.equal(statuses.at(-1), 'failed', JSON.stringify(statuses));
  });

  it('(b) the model backend: cancel-turn while a page tool call waits ends the turn at once; the next prompt works', async () => {
    const srv = await startOpenAiServer({
      respond: (body) => {
        const toolMsg = body.messages.find((m) => m.role === 'tool');
        if (toolMsg) return { text: `The page said: ${toolMsg.content}` };
        return { toolCalls: [{ name: 'lookup', arguments: { query: 'mug' } }] };
      },
    });
    cleanups.push(() => srv.close());
    const eng = await startEngine({
      files: { 'config.json': { agent: 'llm:fake' }, 'providers.json': { providers: [{ id: 'fake', kind: 'openai', name: 'Fake', baseUrl: srv.url }] } },
    });
    let calls = 0;
    // The first call waits for a visitor who never decides (a call may wait 10 minutes); later ones answer.
    const handler = () => (++calls === 1 ? new Promise(() => {}) : ANSWER);
    const { api, sid, page, stream } = await pageSession(eng, { prompt: 'Find a mug', tools: [LOOKUP], handler });
    await stream.waitFor((e) => e.event === 'tool_call' && e.data.status === 'in_progress', 10000);
    assert.ok(await poll(() => page.calls.length === 1, { timeoutMs: 5000 }));
    const asked = Date.now();
    assert.equal((await api.cancelTurn(sid)).status, 200);
    assert.ok(await poll(async () => (await api.get(sid)).json?.status === 'idle', { timeoutMs: 5000, intervalMs: 50 }),
      `still ${(await api.get(sid)).json?.status}`);
    assert.ok(Date.now() - asked < 5000);
    assert.equal((await api.prompt(sid, { prompt: 'Find a mug again' })).status, 200);
    const tc = await stream.waitFor((e) => e.event === 'turn_completed' && e.data.text.includes('The page said'), 15000);
    assert.equal(tc.data.text, `The page said: ${ANSWER}`);
    assert.equal(page.calls.length, 2);
  });

  /** A real agent through the engine with a scripted model API that calls the page's tool. */
  async function realAgentTurn({ id, name, spec, api }) {
    const eng = await startEngine({
      files: { 'config.json': { agent: id, agents: { [id]: { name, command: spec.command, args: spec.args, env: spec.env } } } },
    });
    const { page, stream } = await pageSession(eng, { prompt: 'Find a mug, please.', tools: [LOOKUP], handler: () => ANSWER });
    const tc = await turnDone(eng, stream, 90000, () =>
      `model API: ${JSON.stringify(api.requests.map((r) => ({ path: r.path, kind: r.kind, offered: r.offeredTools, results: r.toolResults })))}\npage: ${JSON.stringify(page.messages.filter((m) => m.type !== 'ack'))}`);
    return { eng, page, stream, tc };
  }

  it('(c) the real Gemini CLI: the scripted Gemini API calls mcp_webmcp_lookup; the page answers; the second answer quotes it', { timeout: 150000 }, async () => {
    assert.ok(fs.existsSync(GEMINI_BIN), `${GEMINI_BIN} is missing: run npm ci`);
    const api = await startGeminiServer({ toolCall: { name: 'mcp_webmcp_lookup', args: { query: 'mug' }, reply: (r) => `The shop says: ${r}` } });
    const home = await makeHome();
    cleanups.push(async () => {
      await api.close();
      await fsp.rm(home, { recursive: true, force: true });
    });
    const { page, stream, tc } = await realAgentTurn({ id: 'gemini-real', name: 'Gemini CLI', spec: geminiAgentSpec({ apiUrl: api.url, home }), api });
    const turns = api.requests.filter((r) => r.kind === 'turn');
    assert.ok(turns[0]?.offeredTools?.includes('mcp_webmcp_lookup'), `Gemini lists the page tool: ${JSON.stringify(turns[0]?.offeredTools)}`);
    assertPageCall(page);
    const results = turns.flatMap((r) => r.toolResults || []);
    assert.ok(results.some((r) => r.name === 'mcp_webmcp_lookup' && r.text.includes(ANSWER)), `the model got the result: ${JSON.stringify(results)}`);
    // Gemini wraps what a tool returns in <untrusted_context> before its model sees it.
    assert.ok(tc.data.text.includes('The shop says:') && tc.data.text.includes(ANSWER), tc.data.text);
    const perms = events(stream, 'permission');
    assert.ok(perms.length >= 1, 'Gemini asks before an MCP tool in default mode');
    for (const p of perms) assert.deepEqual(p, { toolName: 'mcp__webmcp__lookup', allow: true });
  });

  it('(d) the real Claude Code adapter: the scripted Anthropic API calls mcp__webmcp__lookup; the page answers; the second answer quotes it', { timeout: 150000 }, async (t) => {
    assert.ok(fs.existsSync(CLAUDE_ACP_BIN), `${CLAUDE_ACP_BIN} is missing: run npm ci`);
    const api = await startAnthropicServer({ toolCall: { name: 'mcp__webmcp__lookup', input: { query: 'mug' }, reply: (r) => `The shop says: ${r}` } });
    const home = await makeHome();
    cleanups.push(async () => {
      await api.close();
      await fsp.rm(home, { recursive: true, force: true });
    });
    const { page, stream, tc } = await realAgentTurn({ id: 'claude-acp', name: 'Claude Code', spec: claudeAgentSpec({ apiUrl: api.url, home }), api });
    const turns = api.requests.filter((r) => r.kind === 'turn');
    assert.ok(turns[0]?.offeredTools?.includes('mcp__webmcp__lookup'), `Claude lists the page tool: ${JSON.stringify(turns[0]?.offeredTools)}`);
    assertPageCall(page);
    const results = turns.flatMap((r) => r.toolResults || []);
    assert.ok(results.some((r) => !r.isError && r.text.includes(ANSWER)), `the model got the result: ${JSON.stringify(results)}`);
    assert.ok(tc.data.text.includes(`The shop says: ${ANSWER}`), tc.data.text);
    assertToolCallEvents(stream);
    const perms = events(stream, 'permission');
    for (const p of perms) assert.deepEqual(p, { toolName: 'mcp__webmcp__lookup', allow: true });
    // With allowedTools ["mcp__webmcp"] Claude runs page tools without asking (see tests/fakes/README.md).
    if (!perms.length) t.diagnostic('Claude asked no permission for the page tool (allowedTools covers mcp__webmcp)');
  });
});
