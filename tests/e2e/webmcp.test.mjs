// The page's side of page tools (issue 4, spec "Page tools (WebMCP)"): registration, the tool channel over
// WebSocket (`ws`), every message of the two tables, token rules, reconnect, pings, timeouts, and the end of a session.
// The AI's side is driven with raw JSON-RPC posts here (mcpSession); tests/e2e/mcp-endpoint.test.mjs covers it in depth.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startEngine, startFakeEngine, stopAll, sessionApi, pairCli, freshOrigin, sleep, poll,
  decodeRegistration, wsUrl, wsOpen, recordSocket, registerPage, PageChannel, pageSession, mcpSession,
} from './helpers.mjs';
import { startOpenAiServer } from '../fakes/openai-server.mjs';

const CHANNEL_RE = /^\/webmcp\/channel\/[A-Za-z0-9_-]+$/;
const LOOKUP = {
  name: 'lookup',
  description: 'Look a word up.',
  inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

/** A paired page with a prepared (not approved) session. */
async function prepared(eng, origin = freshOrigin('wm')) {
  const { token } = await pairCli(eng, origin);
  const api = sessionApi(eng, { origin, token });
  const prep = await api.prepare({});
  assert.equal(prep.status, 201, prep.body);
  return { origin, token, api, sid: prep.json.sessionId, reg: prep.json.registrationToken, prep };
}

/** Open a channel socket and record it. */
async function openChannel(eng, channel, token, { origin } = {}) {
  const r = await wsOpen(wsUrl(eng, `${channel}?token=${encodeURIComponent(token)}`), { origin });
  assert.ok(r.ws, `channel upgrade refused: ${r.status} ${r.body}`);
  return recordSocket(r.ws);
}

/** Send one message on a recorded socket and return the next message from the engine. */
async function roundTrip(sock, msg, ms = 3000) {
  const from = sock.messages.length;
  sock.send(msg);
  return sock.waitFor(() => true, ms, { from });
}

describe('page tools: the WebMCP channel (page side)', { timeout: 120000 }, () => {
  after(stopAll);

  it('prepare: registrationToken is base64 of {server: ws://127.0.0.1:<port>, token}; webmcpUrl is http://127.0.0.1:<port>', async () => {
    const eng = await startFakeEngine();
    const { prep } = await prepared(eng);
    assert.equal(prep.json.webmcpUrl, `http://127.0.0.1:${eng.port}`);
    const reg = decodeRegistration(prep.json.registrationToken);
    assert.deepEqual(Object.keys(reg).sort(), ['server', 'token']);
    assert.equal(reg.server, `ws://127.0.0.1:${eng.port}`);
    assert.equal(typeof reg.token, 'string');
    assert.ok(reg.token.length >= 16, reg.token);
  });

  it('register with the whole blob: registerSuccess {channel, token}, then the engine closes; the registration token works once', async () => {
    const eng = await startFakeEngine();
    const { origin, reg } = await prepared(eng);
    const first = await registerPage(eng, reg, { origin });
    assert.deepEqual(Object.keys(first.reply).sort(), ['channel', 'token', 'type'], JSON.stringify(first.reply));
    assert.equal(first.reply.type, 'registerSuccess');
    assert.match(first.reply.channel, CHANNEL_RE);
    assert.equal(typeof first.reply.token, 'string');
    assert.ok(first.reply.token.length >= 16);
    assert.ok(first.closed, 'the engine closes the register socket after registerSuccess');
    assert.equal(first.messages.length, 1, JSON.stringify(first.messages));

    const again = await registerPage(eng, reg, { origin });
    assert.deepEqual(again.reply, { type: 'error', message: 'Invalid registration token' });
    assert.ok(again.closed, 'closed after the error');
    // the inner token of the used blob is spent too
    const inner = await registerPage(eng, decodeRegistration(reg).token, { origin });
    assert.deepEqual(inner.reply, { type: 'error', message: 'Invalid registration token' });
  });

  it('register with the inner token works, once', async () => {
    const eng = await startFakeEngine();
    const { origin, reg } = await prepared(eng);
    const inner = decodeRegistration(reg).token;
    const r = await registerPage(eng, inner, { origin });
    assert.equal(r.reply.type, 'registerSuccess', JSON.stringify(r.reply));
    assert.match(r.reply.channel, CHANNEL_RE);
    const blob = await registerPage(eng, reg, { origin });
    assert.deepEqual(blob.reply, { type: 'error', message: 'Invalid registration token' }, 'the blob of a spent inner token is spent');
  });

  it('register errors: Invalid JSON, Expected register message, Invalid registration token; each then closed', async () => {
    const eng = await startFakeEngine();
    const { origin, reg } = await prepared(eng);
    const inner = decodeRegistration(reg).token;
    const cases = [
      ['not json {', 'Invalid JSON'],
      [{ type: 'hello', token: reg }, 'Expected register message'],
      [{ token: reg }, 'Expected register message'],
      [{ type: 'register', token: 'x'.repeat(43) }, 'Invalid registration token'],
      [{ type: 'register', token: `${inner}x` }, 'Invalid registration token'],
      [{ type: 'register' }, 'Invalid registration token'],
      [{ type: 'register', token: Buffer.from(JSON.stringify({ server: `ws://127.0.0.1:${eng.port}`, token: 'nope' })).toString('base64') }, 'Invalid registration token'],
    ];
    for (const [message, expected] of cases) {
      const r = await registerPage(eng, null, { origin, message });
      assert.deepEqual(r.reply, { type: 'error', message: expected }, `sent ${JSON.stringify(message)}`);
      assert.ok(r.closed, `closed after ${JSON.stringify(message)}`);
    }
    // none of this spent the real token
    const ok = await registerPage(eng, reg, { origin });
    assert.equal(ok.reply.type, 'registerSuccess', JSON.stringify(ok.reply));
  });

  it('the register upgrade: 403 before the upgrade for a web origin without a grant; a paired origin and a local caller may', async () => {
    const eng = await startFakeEngine();
    const { origin, reg } = await prepared(eng);
    const stranger = await wsOpen(wsUrl(eng, '/webmcp/register'), { origin: freshOrigin('stranger') });
    assert.equal(stranger.ws, undefined, 'must not upgrade');
    assert.equal(stranger.status, 403);
    const paired = await wsOpen(wsUrl(eng, '/webmcp/register'), { origin });
    assert.ok(paired.ws, `paired origin: ${paired.status}`);
    // The ws client offers permessage-deflate; the engine never takes it (compressed frames from a
    // page are a decompression bomb, and secrets next to page text invite CRIME-style guessing).
    assert.equal(paired.ws.extensions, '', 'no permessage-deflate');
    paired.ws.close();
    // a local process (no Origin) registers its own session
    const lp = await sessionApi(eng).prepare({});
    const r = await registerPage(eng, lp.json.registrationToken);
    assert.equal(r.reply.type, 'registerSuccess', JSON.stringify(r.reply));
    // and the page registers its own
    const rp = await registerPage(eng, reg, { origin });
    assert.equal(rp.reply.type, 'registerSuccess', JSON.stringify(rp.reply));
  });

  it('the channel upgrade: 401 for a wrong, missing or foreign token or an unknown id; 403 for a web origin without a grant', async () => {
    const eng = await startFakeEngine();
    const a = await prepared(eng);
    const b = await prepared(eng);
    const ra = (await registerPage(eng, a.reg, { origin: a.origin })).reply;
    const rb = (await registerPage(eng, b.reg, { origin: b.origin })).reply;
    const id = ra.channel.split('/').pop();
    const refused = async (p, origin, status, what) => {
      const r = await wsOpen(wsUrl(eng, p), { origin });
      if (r.ws) r.ws.close();
      assert.equal(r.ws, undefined, `${what}: must not upgrade`);
      assert.equal(r.status, status, `${what}: ${r.status} ${r.body}`);
    };
    await refused(`${ra.channel}?token=wrong`, a.origin, 401, 'wrong token');
    await refused(`${ra.channel}?token=${ra.token}x`, a.origin, 401, 'token with a suffix');
    await refused(ra.channel, a.origin, 401, 'no token');
    await refused(`${ra.channel}?token=`, a.origin, 401, 'empty token');
    await refused(`${ra.channel}?token=${rb.token}`, a.origin, 401, 'the token of another channel');
    await refused(`/webmcp/channel/${id}x?token=${ra.token}`, a.origin, 401, 'unknown id');
    await refused(`/webmcp/channel/nope?token=${ra.token}`, a.origin, 401, 'unknown id');
    await refused(`${ra.channel}?token=${ra.token}`, freshOrigin('stranger'), 403, 'web origin without a grant');
    // the right token: from the page's origin, and from a local caller
    const ok = await openChannel(eng, ra.channel, ra.token, { origin: a.origin });
    ok.close();
    await ok.closed;
    const lp = await sessionApi(eng).prepare({});
    const rl = (await registerPage(eng, lp.json.registrationToken)).reply;
    const loc = await openChannel(eng, rl.channel, rl.token);
    loc.close();
  });

  it('every page message: registerTool (flat and nested) acked, names checked, deregisterTool, registerResource, registerPrompt, ping, unknown type', async () => {
    const eng = await startFakeEngine();
    const p = await prepared(eng);
    const { reply } = await registerPage(eng, p.reg, { origin: p.origin });
    const sock = await openChannel(eng, reply.channel, reply.token, { origin: p.origin });

    assert.deepEqual(await roundTrip(sock, { type: 'registerTool', ...LOOKUP }), { type: 'ack', registration: 'registerTool', name: 'lookup' });
    assert.deepEqual(
      await roundTrip(sock, { type: 'registerTool', tool: { name: 'nested_tool', description: 'Nested.' } }),
      { type: 'ack', registration: 'registerTool', name: 'nested_tool' },
    );
    // Claude calls it mcp__webmcp__<name>, and the Anthropic API takes tool names of at most 64 characters: 64 - 13.
    const longest = 'a'.repeat(51);
    assert.deepEqual(await roundTrip(sock, { type: 'registerTool', name: longest }), { type: 'ack', registration: 'registerTool', name: longest });
    assert.deepEqual(await roundTrip(sock, { type: 'registerTool', name: 'a'.repeat(52) }),
      { type: 'error', message: 'Invalid tool name: use 1 to 51 characters of A-Z a-z 0-9 _ -' });
    assert.deepEqual(await roundTrip(sock, { type: 'registerTool', name: 'Mixed-Case_9' }), { type: 'ack', registration: 'registerTool', name: 'Mixed-Case_9' });
    for (const bad of ['', 'has space', 'a'.repeat(64), 'a'.repeat(65), 'dot.ted', 'slash/name', 'ünï', 'semi;colon']) {
      const r = await roundTrip(sock, { type: 'registerTool', name: bad });
      assert.equal(r.type, 'error', `name ${JSON.stringify(bad)}: ${JSON.stringify(r)}`);
      assert.equal(typeof r.message, 'string');
      assert.ok(r.message.length > 0);
    }
    for (const bad of [{ type: 'registerTool' }, { type: 'registerTool', name: 42 }, { type: 'registerTool', tool: {} }]) {
      const r = await roundTrip(sock, bad);
      assert.equal(r.type, 'error', `${JSON.stringify(bad)}: ${JSON.stringify(r)}`);
    }
    assert.deepEqual(
      await roundTrip(sock, { type: 'registerResource', uri: 'page://cart', name: 'cart', description: 'The cart.', mimeType: 'application/json' }),
      { type: 'ack', registration: 'registerResource', name: 'page://cart' },
    );
    assert.deepEqual(
      await roundTrip(sock, { type: 'registerPrompt', name: 'summarize', description: 'Summarize.', arguments: [{ name: 'topic', required: true }] }),
      { type: 'ack', registration: 'registerPrompt', name: 'summarize' },
    );
    assert.deepEqual(await roundTrip(sock, { type: 'ping' }), { type: 'pong' });
    const unknown = await roundTrip(sock, { type: 'launchRockets' });
    assert.equal(unknown.type, 'error', JSON.stringify(unknown));
    assert.equal(typeof unknown.message, 'string');

    // what the AI sees
    const mcp = await mcpSession(eng, reply.token);
    let tools = (await mcp.call('tools/list')).rpc.result.tools;
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.deepEqual(Object.keys(byName).sort(), ['Mixed-Case_9', longest, 'lookup', 'nested_tool'].sort());
    assert.equal(byName.lookup.description, LOOKUP.description);
    assert.deepEqual(byName.lookup.inputSchema, LOOKUP.inputSchema);
    assert.equal(byName.nested_tool.description, 'Nested.');
    assert.equal(byName.nested_tool.inputSchema?.type, 'object', `default input schema: ${JSON.stringify(byName.nested_tool)}`);
    assert.deepEqual(byName.nested_tool.inputSchema.properties ?? {}, {});

    // registerTool again replaces; deregisterTool removes
    await roundTrip(sock, { type: 'registerTool', name: 'lookup', description: 'Replaced.' });
    sock.send({ type: 'deregisterTool', name: 'nested_tool' });
    await sleep(200);
    tools = (await mcp.call('tools/list')).rpc.result.tools;
    assert.deepEqual(tools.map((t) => t.name).sort(), ['Mixed-Case_9', longest, 'lookup'].sort());
    assert.equal(tools.find((t) => t.name === 'lookup').description, 'Replaced.');

    const resources = (await mcp.call('resources/list')).rpc.result.resources;
    assert.equal(resources.length, 1, JSON.stringify(resources));
    assert.equal(resources[0].uri, 'page://cart');
    assert.equal(resources[0].name, 'cart');
    assert.equal(resources[0].mimeType, 'application/json');
    const prompts = (await mcp.call('prompts/list')).rpc.result.prompts;
    assert.equal(prompts.length, 1, JSON.stringify(prompts));
    assert.equal(prompts[0].name, 'summarize');
    assert.deepEqual(prompts[0].arguments, [{ name: 'topic', required: true }]);
    // nothing in all this closed the channel
    assert.equal(sock.closeInfo, null);
  });

  it('engine → page: callTool {id, tool, arguments}, readResource {id, uri}, getPrompt {id, name, arguments}; answers reach the AI', async () => {
    const eng = await startFakeEngine();
    const p = await prepared(eng);
    const page = await PageChannel.connect(eng, p.reg, {
      origin: p.origin,
      tools: [LOOKUP],
      handler: (m) => {
        if (m.type === 'callTool') return `found ${m.arguments.query}`;
        if (m.type === 'readResource') return { contents: [{ uri: m.uri, mimeType: 'text/plain', text: 'two mugs' }] };
        return { messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${m.arguments.topic}` } }] };
      },
    });
    page.send({ type: 'registerResource', uri: 'page://cart', name: 'cart' });
    page.send({ type: 'registerPrompt', name: 'summarize', arguments: [{ name: 'topic' }] });
    await page.waitFor((m) => m.type === 'ack' && m.registration === 'registerPrompt');
    const mcp = await mcpSession(eng, page.token);

    const call = await mcp.call('tools/call', { name: 'lookup', arguments: { query: 'mug' } });
    assert.deepEqual(call.rpc.result, { content: [{ type: 'text', text: 'found mug' }], isError: false }, call.body);
    const ct = page.calls[0];
    assert.deepEqual(Object.keys(ct).sort(), ['arguments', 'id', 'tool', 'type']);
    assert.equal(ct.tool, 'lookup');
    assert.deepEqual(ct.arguments, { query: 'mug' });
    assert.ok((typeof ct.id === 'string' && ct.id.length > 0) || Number.isInteger(ct.id), JSON.stringify(ct));

    const rr = await mcp.call('resources/read', { uri: 'page://cart' });
    const readMsg = page.messages.find((m) => m.type === 'readResource');
    assert.ok(readMsg, JSON.stringify(page.messages));
    assert.equal(readMsg.uri, 'page://cart');
    assert.ok(readMsg.id !== undefined);
    assert.deepEqual(rr.rpc.result?.contents, [{ uri: 'page://cart', mimeType: 'text/plain', text: 'two mugs' }], rr.body);

    const gp = await mcp.call('prompts/get', { name: 'summarize', arguments: { topic: 'mugs' } });
    const getMsg = page.messages.find((m) => m.type === 'getPrompt');
    assert.ok(getMsg, JSON.stringify(page.messages));
    assert.equal(getMsg.name, 'summarize');
    assert.deepEqual(getMsg.arguments, { topic: 'mugs' });
    assert.deepEqual(gp.rpc.result?.messages, [{ role: 'user', content: { type: 'text', text: 'Summarize mugs' } }], gp.body);

    // ids are distinct per call
    await mcp.call('tools/call', { name: 'lookup', arguments: { query: 'cup' } });
    assert.notEqual(page.calls[0].id, page.calls[1].id);
    page.close();
  });

  it('toolResponse: a string as is, an object as JSON text, error as a string or {message}; an unknown id is harmless', async () => {
    const eng = await startFakeEngine();
    const p = await prepared(eng);
    const answers = {
      str: 'plain text',
      obj: [{ name: 'Celadon mug', price: 24, stock: 3 }],
      num: 42,
      errs: { error: 'The catalog is offline.' },
      errm: { error: { message: 'Out of stock.' } },
    };
    const page = await PageChannel.connect(eng, p.reg, {
      origin: p.origin,
      tools: [{ name: 'answer', inputSchema: { type: 'object', properties: { which: { type: 'string' } } } }],
      handler: (m) => answers[m.arguments.which],
    });
    page.send({ type: 'toolResponse', id: 'no-such-call', result: 'x' });
    const mcp = await mcpSession(eng, page.token);
    const call = (which) => mcp.call('tools/call', { name: 'answer', arguments: { which } });
    assert.deepEqual((await call('str')).rpc.result, { content: [{ type: 'text', text: 'plain text' }], isError: false });
    const o = (await call('obj')).rpc.result;
    assert.equal(o.isError, false);
    assert.deepEqual(JSON.parse(o.content[0].text), answers.obj);
    assert.deepEqual(JSON.parse((await call('num')).rpc.result.content[0].text), 42);
    // The page's error, as a string or { message }: a tool call that failed, a result with isError.
    assert.deepEqual((await call('errs')).rpc.result, { content: [{ type: 'text', text: 'The catalog is offline.' }], isError: true });
    assert.deepEqual((await call('errm')).rpc.result, { content: [{ type: 'text', text: 'Out of stock.' }], isError: true });
    assert.equal(page.sock.closeInfo, null);
    page.close();
  });

  it('reconnect with the channel token: the new socket replaces the old one (closed by the engine) and gets the calls', async () => {
    const eng = await startFakeEngine();
    const p = await prepared(eng);
    const page = await PageChannel.connect(eng, p.reg, { origin: p.origin, tools: [LOOKUP], handler: () => 'answered' });
    const old = page.sock;
    await page.reconnect();
    const closed = await old.waitClosed(3000).catch(() => null);
    assert.ok(closed, 'the engine closes the replaced socket');
    await page.registerTool(LOOKUP);
    const mcp = await mcpSession(eng, page.token);
    const r = await mcp.call('tools/call', { name: 'lookup', arguments: { query: 'a' } });
    assert.equal(r.rpc.result?.content?.[0]?.text, 'answered', r.body);
    assert.equal(page.sock.messages.filter((m) => m.type === 'callTool').length, 1, 'the call went to the new socket');
    assert.equal(old.messages.filter((m) => m.type === 'callTool').length, 0);
    // and again, many times
    for (let i = 0; i < 3; i++) await page.reconnect();
    assert.ok(await poll(() => page.sockets.slice(0, -1).every((s) => s.closeInfo), { timeoutMs: 3000 }), 'only the newest socket stays');
    page.close();
  });

  it('tools declared before and after approve stay for the session; the channel token works across the session', async () => {
    const eng = await startFakeEngine();
    const { api, sid, page, stream } = await pageSession(eng, { tools: [{ name: 'before' }], approve: false });
    const mcp = await mcpSession(eng, page.token);
    assert.deepEqual((await mcp.call('tools/list')).rpc.result.tools.map((t) => t.name), ['before']);
    assert.equal((await api.approve(sid)).status, 200);
    await stream.waitFor('ready', 8000);
    await page.registerTool({ name: 'after' });
    const names = async () => (await mcp.call('tools/list')).rpc.result.tools.map((t) => t.name).sort();
    assert.deepEqual(await names(), ['after', 'before']);
    // a turn doesn't drop them
    assert.equal((await api.prompt(sid, { prompt: 'hi' })).status, 200);
    await stream.waitFor('turn_completed', 8000);
    assert.deepEqual(await names(), ['after', 'before']);
    page.close();
  });

  it('ping: the engine pings every pingMs and the page answers pong; the page\'s ping gets pong', async () => {
    const eng = await startFakeEngine({ timings: { pingMs: 200 } });
    const p = await prepared(eng);
    const page = await PageChannel.connect(eng, p.reg, { origin: p.origin });
    await page.waitFor('ping', 3000);
    await sleep(700);
    const pings = page.messages.filter((m) => m.type === 'ping');
    assert.ok(pings.length >= 2 && pings.length <= 8, `pings in ~0.9 s at 200 ms: ${pings.length}`);
    assert.deepEqual(pings[0], { type: 'ping' });
    assert.equal(page.sock.closeInfo, null, 'answering pong keeps the channel open');
    const from = page.sock.messages.length;
    page.send({ type: 'ping' });
    await page.waitFor((m) => m.type === 'pong', 2000, { from });
    // a pong without a ping is harmless
    page.send({ type: 'pong' });
    await sleep(100);
    assert.equal(page.sock.closeInfo, null);
    page.close();
  });

  for (const how of ['close', 'cancel']) {
    it(`the engine closes the channel when the session ends (${how}); the channel token is then refused (401)`, async () => {
      const eng = await startFakeEngine();
      const { api, sid, page, prep, origin } = await pageSession(eng, { tools: [LOOKUP] });
      await page.sock.waitFor(() => false, 300).catch(() => {});
      assert.equal(page.sock.closeInfo, null);
      assert.equal((await api[how](sid)).status, 200);
      assert.ok(await page.sock.waitClosed(3000).catch(() => null), 'the channel closed within 3 s');
      const again = await wsOpen(page.url, { origin });
      if (again.ws) again.ws.close();
      assert.equal(again.ws, undefined, 'replay after the end must not upgrade');
      assert.equal(again.status, 401);
      // the MCP endpoint refuses the token too
      const r = await mcpSession(eng, page.token).then(() => 'accepted', (e) => e.message);
      assert.match(r, /^initialize: 401/);
      // and the registration token stays spent
      const reg = await registerPage(eng, prep.json.registrationToken, { origin });
      assert.deepEqual(reg.reply, { type: 'error', message: 'Invalid registration token' });
    });
  }

  it('a registration token of an ended session is refused; an unused one too', async () => {
    const eng = await startFakeEngine();
    const p = await prepared(eng);
    assert.equal((await p.api.close(p.sid)).status, 200);
    const r = await registerPage(eng, p.reg, { origin: p.origin });
    assert.deepEqual(r.reply, { type: 'error', message: 'Invalid registration token' });
  });

  it('a call the page never answers fails after toolCallMs; the AI sees an error', async () => {
    const eng = await startFakeEngine({ timings: { toolCallMs: 600 } });
    const p = await prepared(eng);
    const page = await PageChannel.connect(eng, p.reg, { origin: p.origin, tools: [LOOKUP], handler: () => PageChannel.NO_ANSWER });
    const mcp = await mcpSession(eng, page.token);
    const t0 = Date.now();
    const r = await mcp.call('tools/call', { name: 'lookup', arguments: { query: 'slow' } }, { timeoutMs: 8000 });
    const ms = Date.now() - t0;
    assert.ok(ms >= 500 && ms < 5000, `answered after ${ms} ms (toolCallMs 600)`);
    // The page was asked and did not answer: a failed tool call (isError), which MCP clients show the model.
    assert.equal(r.rpc?.result?.isError, true, `the timeout reaches the AI as a failed call: ${r.status} ${r.body}`);
    assert.equal(r.rpc.result.content[0].text, 'The page did not answer within 600 milliseconds');
    assert.equal(page.calls.length, 1);
    // a late answer is harmless, and the channel stays usable
    page.send({ type: 'toolResponse', id: page.calls[0].id, result: 'too late' });
    page.handler = () => 'on time';
    const r2 = await mcp.call('tools/call', { name: 'lookup', arguments: { query: 'fast' } });
    assert.equal(r2.rpc.result?.content?.[0]?.text, 'on time', r2.body);
    page.close();
  });

  it('a call while no channel is connected fails at once with -32001', async () => {
    const eng = await startFakeEngine();
    const p = await prepared(eng);
    const page = await PageChannel.connect(eng, p.reg, { origin: p.origin, tools: [LOOKUP] });
    page.close();
    await page.sock.closed;
    await sleep(100);
    const mcp = await mcpSession(eng, page.token);
    const t0 = Date.now();
    const r = await mcp.call('tools/call', { name: 'lookup', arguments: { query: 'x' } });
    assert.ok(Date.now() - t0 < 2000, `at once, not after a wait: ${Date.now() - t0} ms`);
    assert.equal(r.rpc?.error?.code, -32001, `${r.status} ${r.body}`);
    // a page that registered but never opened its channel: the same
    const q = await prepared(eng);
    const { reply } = await registerPage(eng, q.reg, { origin: q.origin });
    const mcp2 = await mcpSession(eng, reply.token);
    const r2 = await mcp2.call('tools/call', { name: 'lookup', arguments: {} });
    assert.ok(r2.rpc?.error, `${r2.status} ${r2.body}`);
  });

  it('a page socket that drops mid-call: the waiting call fails at once, not after toolCallMs', async () => {
    const eng = await startFakeEngine();
    const p = await prepared(eng);
    const page = await PageChannel.connect(eng, p.reg, { origin: p.origin, tools: [LOOKUP], handler: () => PageChannel.NO_ANSWER });
    const mcp = await mcpSession(eng, page.token);
    const pending = mcp.call('tools/call', { name: 'lookup', arguments: { query: 'x' } }, { timeoutMs: 8000 });
    await page.waitFor('callTool', 3000);
    const t0 = Date.now();
    page.sock.terminate();
    const r = await pending;
    assert.ok(Date.now() - t0 < 3000, `failed ${Date.now() - t0} ms after the drop`);
    // The page was sent the call and went away: a failed tool call, as a timeout is.
    assert.deepEqual(r.rpc?.result, { content: [{ type: 'text', text: 'The page disconnected before it answered' }], isError: true }, r.body);
  });

  it('sessions are separate: one page\'s channel token sees only its own tools', async () => {
    const eng = await startEngine();
    const a = await prepared(eng);
    const b = await prepared(eng);
    const pa = await PageChannel.connect(eng, a.reg, { origin: a.origin, tools: [{ name: 'tool_a' }] });
    const pb = await PageChannel.connect(eng, b.reg, { origin: b.origin, tools: [{ name: 'tool_b' }] });
    const ma = await mcpSession(eng, pa.token);
    const mb = await mcpSession(eng, pb.token);
    assert.deepEqual((await ma.call('tools/list')).rpc.result.tools.map((t) => t.name), ['tool_a']);
    assert.deepEqual((await mb.call('tools/list')).rpc.result.tools.map((t) => t.name), ['tool_b']);
    const cross = await ma.call('tools/call', { name: 'tool_b', arguments: {} });
    assert.ok(cross.rpc?.error, cross.body);
    assert.equal(pb.calls.length, 0);
    pa.close();
    pb.close();
  });

  it('the engine\'s own model: arguments that are not valid JSON go back to it as the call\'s error, and the page is not called', async () => {
    const sse = (o) => `data: ${JSON.stringify(o)}\n\n`;
    const chunk = (delta, finish = null) => sse({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
    const srv = await startOpenAiServer({
      respond: (body) => {
        const result = body.messages.find((m) => m.role === 'tool');
        if (result) return { text: `Saw: ${result.content}` };
        const name = (body.tools || []).map((t) => t.function?.name).find((n) => n?.endsWith('lookup'));
        return {  // a small local model's call: its JSON cut short
          rawBody: chunk({ role: 'assistant', content: '' }) +
            chunk({ tool_calls: [{ index: 0, id: 'b1', type: 'function', function: { name, arguments: '{"query": "mug"' } }] }) +
            chunk({}, 'tool_calls') + 'data: [DONE]\n\n',
          contentType: 'text/event-stream',
        };
      },
    });
    try {
      const eng = await startEngine({
        files: { 'config.json': { agent: 'llm:fake' }, 'providers.json': { providers: [{ id: 'fake', kind: 'openai', name: 'Fake', baseUrl: srv.url }] } },
      });
      const { page, stream } = await pageSession(eng, { prompt: 'Find a mug', tools: [LOOKUP], handler: () => 'found' });
      const done = await stream.waitFor((e) => e.event === 'turn_completed' || e.event === 'failed', 15000);
      assert.equal(done.event, 'turn_completed', JSON.stringify(done));
      assert.equal(page.calls.length, 0, `the page was not called: ${JSON.stringify(page.calls)}`);
      assert.match(done.data.text, /^Saw: Error: Your arguments were not valid JSON: .+\. Call the tool again with its arguments as one JSON object\.$/);
      page.close();
    } finally {
      srv.close();
    }
  });
});
