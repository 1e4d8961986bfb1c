// The AI's side of page tools (issue 4, spec "The AI's side"): POST /webmcp/mcp as an MCP server over streamable
// HTTP, driven with the official @modelcontextprotocol/sdk client, and with raw requests for the edge cases
// (versions, notifications, Accept, Origin, bearer, GET stream); plus the `leuria mcp-stdio` bridge.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Client as SdkClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema, EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  startFakeEngine, stopAll, sessionApi, pairCli, freshOrigin, sleep, request, openStream, cleanEnv, BIN,
  PageChannel, mcpUrl, mcpPost, mcpSession, parseMcpBody, poll, readChunks, rawHttp,
} from './helpers.mjs';

const LOOKUP = {
  name: 'lookup',
  description: 'Look a word up.',
  inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  annotations: { readOnlyHint: true },
};
/** The SDK client with bounded waits: every request times out after 10 s unless told otherwise (SDK default: 60 s). */
class Client extends SdkClient {
  request(req, schema, options = {}) {
    return super.request(req, schema, { timeout: 10000, ...options });
  }
}

const VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18'];
const LATEST = '2025-06-18';

const clients = [];
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await stopAll();
});

/** Engine + paired page + prepared session + open channel with `tools`; handler answers calls. */
async function setup({ tools = [LOOKUP], handler, timings, resources = [], prompts = [] } = {}) {
  const eng = await startFakeEngine({ timings });
  const origin = freshOrigin('mcp');
  const { token } = await pairCli(eng, origin);
  const api = sessionApi(eng, { origin, token });
  const prep = await api.prepare({});
  assert.equal(prep.status, 201, prep.body);
  const page = await PageChannel.connect(eng, prep.json.registrationToken, { origin, tools, handler });
  for (const r of resources) page.send({ type: 'registerResource', ...r });
  for (const p of prompts) page.send({ type: 'registerPrompt', ...p });
  if (resources.length || prompts.length) {
    await page.waitFor((m) => m.type === 'ack' && m.registration === (prompts.length ? 'registerPrompt' : 'registerResource') &&
      m.name === (prompts.length ? prompts.at(-1).name : resources.at(-1).uri));
  }
  return { eng, origin, api, sid: prep.json.sessionId, page, token: page.token };
}

/** The SDK client over streamable HTTP with the bearer. */
async function sdkClient(eng, token, { name = 'leuria-e2e' } = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl(eng)), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

async function rejectsWith(promise, code, message) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, 'expected an MCP error');
  assert.equal(err.code, code, `${err}`);
  if (message !== undefined) assert.ok(String(err.message).includes(message), `${err.message} should include ${message}`);
  return err;
}

describe('page tools: the MCP endpoint (AI side)', { timeout: 120000 }, () => {
  it('the SDK client connects: server webmcp, tools capability, tools/list, tools/call, ping', async () => {
    const { eng, page, token } = await setup({ handler: (m) => `found ${m.arguments.query}` });
    const { client, transport } = await sdkClient(eng, token);
    assert.equal(client.getServerVersion()?.name, 'webmcp');
    assert.ok(client.getServerCapabilities()?.tools, JSON.stringify(client.getServerCapabilities()));
    assert.ok(VERSIONS.includes(transport.protocolVersion), `negotiated ${transport.protocolVersion}`);
    const { tools } = await client.listTools();
    assert.equal(tools.length, 1);
    assert.equal(tools[0].name, 'lookup');
    assert.equal(tools[0].description, LOOKUP.description);
    assert.deepEqual(tools[0].inputSchema, LOOKUP.inputSchema);
    assert.deepEqual(tools[0].annotations, LOOKUP.annotations);
    const r = await client.callTool({ name: 'lookup', arguments: { query: 'mug' } });
    assert.deepEqual(r, { content: [{ type: 'text', text: 'found mug' }], isError: false });
    assert.deepEqual(page.calls.map((c) => c.arguments), [{ query: 'mug' }]);
    assert.deepEqual(await client.ping(), {});
  });

  it('a tool the SDK would reject hides no other: a schema without type is an object schema, a wrong one refused, annotations and prompt arguments kept to what MCP defines', async () => {
    const { eng, token, page } = await setup({ prompts: [{ name: 'odd', arguments: [{ name: 'topic', required: 'yes', extra: 1 }, { description: 'no name' }] }] });
    // `inputSchema: {}`: the SDK's Tool schema wants type "object", and Client.listTools checks the whole list.
    assert.deepEqual(await page.registerTool({ name: 'search', inputSchema: {} }), { type: 'ack', registration: 'registerTool', name: 'search' });
    assert.deepEqual(await page.registerTool({ name: 'hinted', annotations: { readOnlyHint: 'yes', title: 'Hinted', destructiveHint: false, color: 'red' } }),
      { type: 'ack', registration: 'registerTool', name: 'hinted' });
    for (const [inputSchema, message] of [
      [{ type: 'string' }, 'inputSchema must be an object schema: its type must be "object"'],
      ['object', 'inputSchema must be an object schema'],
      [{ type: 'object', properties: { q: 'string' } }, 'inputSchema properties must be an object whose values are schemas (objects)'],
    ]) {
      assert.deepEqual(await page.registerTool({ name: 'bad', inputSchema }), { type: 'error', message }, JSON.stringify(inputSchema));
    }
    const { client } = await sdkClient(eng, token);
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.deepEqual(Object.keys(byName).sort(), ['hinted', 'lookup', 'search']);
    assert.deepEqual(byName.search.inputSchema, { type: 'object' });
    assert.deepEqual(byName.lookup.inputSchema, LOOKUP.inputSchema);
    assert.deepEqual(byName.hinted.annotations, { title: 'Hinted', destructiveHint: false });
    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts, [{ name: 'odd', arguments: [{ name: 'topic' }] }]);
    assert.deepEqual((await client.callTool({ name: 'search', arguments: {} })).isError, false);
  });

  it('tools/call with arguments that are not an object: -32602, and the page is not called; none or null: {}', async () => {
    const { eng, token, page } = await setup({ handler: (m) => JSON.stringify(m.arguments) });
    const s = await mcpSession(eng, token);
    for (const args of ['{"query":"x"}', [1], 7, true]) {
      const r = await s.call('tools/call', { name: 'lookup', arguments: args });
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(r.rpc.error, { code: -32602, message: 'arguments must be an object' }, JSON.stringify(args));
    }
    assert.equal(page.calls.length, 0, JSON.stringify(page.calls));
    for (const params of [{ name: 'lookup', arguments: null }, { name: 'lookup' }]) {
      const r = await s.call('tools/call', params);
      assert.deepEqual(r.rpc.result, { content: [{ type: 'text', text: '{}' }], isError: false }, r.body);
    }
    const ok = await s.call('tools/call', { name: 'lookup', arguments: { query: 'x' } });
    assert.deepEqual(ok.rpc.result, { content: [{ type: 'text', text: '{"query":"x"}' }], isError: false }, ok.body);
  });

  it('tools/call through the SDK: string as is, object as JSON text, page error → a result with isError, unknown tool → error', async () => {
    const results = { s: 'just text', o: { name: 'Celadon mug', price: 24 }, a: [1, 'two', null], b: true };
    const { eng, token } = await setup({
      tools: [{ name: 'answer', inputSchema: { type: 'object', properties: { k: { type: 'string' } } } }],
      handler: (m) => {
        if (m.arguments.k === 'err') throw new Error('The catalog is offline.');
        if (m.arguments.k === 'errobj') return { error: { message: 'No such mug.' } };
        return results[m.arguments.k];
      },
    });
    const { client } = await sdkClient(eng, token);
    const call = (k) => client.callTool({ name: 'answer', arguments: { k } });
    assert.deepEqual((await call('s')).content, [{ type: 'text', text: 'just text' }]);
    for (const k of ['o', 'a', 'b']) {
      const r = await call(k);
      assert.equal(r.isError, false);
      assert.equal(r.content.length, 1);
      assert.equal(r.content[0].type, 'text');
      assert.deepEqual(JSON.parse(r.content[0].text), results[k], r.content[0].text);
    }
    // MCP: a tool that ran and failed is a result with isError (clients show it to the model), not a JSON-RPC error.
    assert.deepEqual(await call('err'), { content: [{ type: 'text', text: 'The catalog is offline.' }], isError: true });
    assert.deepEqual(await call('errobj'), { content: [{ type: 'text', text: 'No such mug.' }], isError: true });
    const unk = await client.callTool({ name: 'nope', arguments: {} }).then((r) => ({ result: r }), (e) => ({ error: e }));
    assert.ok(unk.error || unk.result?.isError === true, `unknown tool must fail: ${JSON.stringify(unk.result)}`);
  });

  it('a call waiting on the page when its session ends: a failed tool call saying so', async () => {
    const { eng, token, api, sid, page } = await setup({ handler: () => PageChannel.NO_ANSWER });
    const { client } = await sdkClient(eng, token);
    const pending = client.callTool({ name: 'lookup', arguments: { query: 'x' } });
    await page.waitFor('callTool', 3000);
    assert.equal((await api.close(sid)).status, 200);
    assert.deepEqual(await pending, { content: [{ type: 'text', text: 'The session has ended' }], isError: true });
  });

  it('not connected: a call while the page has no channel fails at once with -32001', async () => {
    const { eng, token, page } = await setup();
    const { client } = await sdkClient(eng, token);
    page.close();
    await page.sock.closed;
    await sleep(100);
    const t0 = Date.now();
    await rejectsWith(client.callTool({ name: 'lookup', arguments: { query: 'x' } }), -32001);
    assert.ok(Date.now() - t0 < 2000, `${Date.now() - t0} ms`);
  });

  it('resources and prompts round trips through the SDK; one the page fails is a JSON-RPC error -32000', async () => {
    const { eng, token, page } = await setup({
      resources: [{ uri: 'page://cart', name: 'cart', description: 'The cart.', mimeType: 'application/json' }],
      prompts: [{ name: 'summarize', description: 'Summarize a topic.', arguments: [{ name: 'topic', description: 'What', required: true }] }],
      handler: (m) => {
        if (m.type === 'readResource' && m.uri === 'page://gone') throw new Error('No such page.');
        if (m.type === 'getPrompt' && m.arguments.topic === 'fail') return { error: { message: 'No summary today.' } };
        if (m.type === 'readResource') return { contents: [{ uri: m.uri, mimeType: 'application/json', text: '{"items":2}' }] };
        if (m.type === 'getPrompt') return { description: 'Summary', messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${m.arguments.topic}` } }] };
        return 'ok';
      },
    });
    const { client } = await sdkClient(eng, token);
    const caps = client.getServerCapabilities();
    assert.ok(caps.resources && caps.prompts, JSON.stringify(caps));
    const { resources } = await client.listResources();
    assert.deepEqual(resources, [{ uri: 'page://cart', name: 'cart', description: 'The cart.', mimeType: 'application/json' }]);
    const rr = await client.readResource({ uri: 'page://cart' });
    assert.deepEqual(rr.contents, [{ uri: 'page://cart', mimeType: 'application/json', text: '{"items":2}' }]);
    assert.equal(page.messages.find((m) => m.type === 'readResource')?.uri, 'page://cart');
    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts, [{ name: 'summarize', description: 'Summarize a topic.', arguments: [{ name: 'topic', description: 'What', required: true }] }]);
    const gp = await client.getPrompt({ name: 'summarize', arguments: { topic: 'mugs' } });
    assert.deepEqual(gp.messages, [{ role: 'user', content: { type: 'text', text: 'Summarize mugs' } }]);
    const g = page.messages.find((m) => m.type === 'getPrompt');
    assert.deepEqual({ name: g.name, arguments: g.arguments }, { name: 'summarize', arguments: { topic: 'mugs' } });
    // Resources and prompts have no failed result in MCP: the page's error is a JSON-RPC error.
    await rejectsWith(client.readResource({ uri: 'page://gone' }), -32000, 'No such page.');
    await rejectsWith(client.getPrompt({ name: 'summarize', arguments: { topic: 'fail' } }), -32000, 'No summary today.');
  });

  it('version negotiation: each supported version is echoed; an unknown one gets the latest (2025-06-18); an MCP-Protocol-Version header naming another gets 400', async () => {
    const { eng, token } = await setup();
    for (const v of [...VERSIONS, '2099-01-01', '2024-10-07', 'garbage']) {
      const r = await mcpPost(eng, token, {
        jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      });
      assert.equal(r.status, 200, `${v}: ${r.status} ${r.body}`);
      const res = r.rpc?.result;
      assert.ok(res, `${v}: ${r.body}`);
      assert.equal(res.protocolVersion, VERSIONS.includes(v) ? v : LATEST, `client ${v}`);
      assert.equal(res.serverInfo?.name, 'webmcp');
      assert.equal(typeof res.serverInfo?.version, 'string');
      assert.ok(res.capabilities?.tools, JSON.stringify(res.capabilities));
      assert.equal(r.rpc.id, 1);
      assert.equal(r.rpc.jsonrpc, '2.0');
      const sid = r.headers['mcp-session-id'];
      assert.ok(sid && /^[\x21-\x7e]+$/.test(sid), `Mcp-Session-Id header (visible ASCII): ${JSON.stringify(r.headers)}`);
    }
    // MCP 2025-06-18: the MCP-Protocol-Version header, when sent, must name a version the server speaks (else 400).
    for (const v of VERSIONS) {
      const ok = await mcpPost(eng, token, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { headers: { 'MCP-Protocol-Version': v } });
      assert.equal(ok.status, 200, `${v}: ${ok.status} ${ok.body}`);
    }
    for (const v of ['2099-01-01', 'garbage']) {
      const bad = await mcpPost(eng, token, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, { headers: { 'MCP-Protocol-Version': v } });
      assert.equal(bad.status, 400, `${v}: ${bad.status} ${bad.body}`);
      assert.equal(bad.rpc?.error?.code, -32600, bad.body);
      assert.match(bad.rpc.error.message, new RegExp(`Unsupported MCP-Protocol-Version: ${v} \\(this server speaks 2024-11-05 2025-03-26 2025-06-18\\)`));
    }
    // not on initialize, where the version is agreed (a client may send its own newest there)
    const init = await mcpPost(eng, token, {
      jsonrpc: '2.0', id: 5, method: 'initialize',
      params: { protocolVersion: '2099-01-01', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }, { headers: { 'MCP-Protocol-Version': '2099-01-01' } });
    assert.equal(init.status, 200, init.body);
    assert.equal(init.rpc.result.protocolVersion, LATEST);
    // notifications, the GET stream and bytes that aren't text (echoed as '?')
    const note = await mcpPost(eng, token, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: { 'MCP-Protocol-Version': '1999' } });
    assert.equal(note.status, 400, note.body);
    const get = await request(eng, { method: 'GET', path: '/webmcp/mcp', headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream', 'MCP-Protocol-Version': '1999' } });
    assert.equal(get.status, 400, get.body);
    const raw = await rawHttp(eng, Buffer.from(`POST /webmcp/mcp HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nAccept: application/json\r\nMCP-Protocol-Version: 2025-\xff\xfe\r\nContent-Length: 2\r\n\r\n{}`, 'latin1'));
    assert.equal(raw.status, 400, raw.raw);
    assert.match(raw.json?.error?.message ?? '', /^Unsupported MCP-Protocol-Version: 2025-\?\? \(/, raw.raw);
    // checked after the bearer: a caller without one learns nothing more
    const anon = await mcpPost(eng, null, { jsonrpc: '2.0', id: 4, method: 'tools/list' }, { headers: { 'MCP-Protocol-Version': 'garbage' } });
    assert.equal(anon.status, 401, anon.body);
  });

  it('notifications answer 202 with an empty body; ping answers {}; unknown method and server/discover answer -32601', async () => {
    const { eng, token } = await setup();
    // Claude Code's new adapter starts with server/discover, before initialize: it must answer at once
    const t0 = Date.now();
    const d = await mcpPost(eng, token, { jsonrpc: '2.0', id: 'disc', method: 'server/discover', params: {} }, { timeoutMs: 3000 });
    assert.ok(Date.now() - t0 < 2000);
    assert.equal(d.rpc?.error?.code, -32601, `${d.status} ${d.body}`);
    assert.equal(d.rpc.id, 'disc');
    const s = await mcpSession(eng, token);
    for (const n of ['notifications/initialized', 'notifications/cancelled', 'notifications/roots/list_changed', 'notifications/whatever']) {
      const r = await s.notify(n, n === 'notifications/cancelled' ? { requestId: 99, reason: 'x' } : undefined);
      assert.equal(r.status, 202, `${n}: ${r.status} ${r.body}`);
      assert.equal(r.body, '', `${n}: empty body`);
    }
    const p = await s.call('ping');
    assert.deepEqual(p.rpc.result, {}, p.body);
    const u = await s.call('tools/destroy', {});
    assert.equal(u.rpc?.error?.code, -32601, u.body);
    const d2 = await s.call('server/discover', {});
    assert.equal(d2.rpc?.error?.code, -32601, d2.body);
    // a JSON-RPC response from the client (e.g. to a server request) is accepted like a notification
    const resp = await mcpPost(eng, token, { jsonrpc: '2.0', id: 777, result: {} }, { headers: s.headers });
    assert.equal(resp.status, 202, `${resp.status} ${resp.body}`);
  });

  it('works without Mcp-Session-Id (clients that drop it), and with it', async () => {
    const { eng, token } = await setup({ handler: () => 'no session needed' });
    const s = await mcpSession(eng, token);
    assert.ok(s.sessionId);
    const withId = await s.call('tools/list');
    assert.deepEqual(withId.rpc.result.tools.map((t) => t.name), ['lookup']);
    const bare = { 'MCP-Protocol-Version': s.version };
    const list = await mcpPost(eng, token, { jsonrpc: '2.0', id: 5, method: 'tools/list' }, { headers: bare });
    assert.equal(list.status, 200, list.body);
    assert.deepEqual(list.rpc.result.tools.map((t) => t.name), ['lookup']);
    const call = await mcpPost(eng, token, { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'lookup', arguments: { query: 'q' } } });
    assert.equal(call.status, 200, call.body);
    assert.equal(call.rpc.result?.content?.[0]?.text, 'no session needed', call.body);
    const n = await mcpPost(eng, token, { jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(n.status, 202);
  });

  it('a kept-alive client makes many calls on one connection (a streamed answer doesn\'t close it)', async () => {
    const { eng, token } = await setup();
    const sock = net.connect(eng.port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    let buf = '';
    let reads = 0;
    sock.setEncoding('latin1').on('data', (d) => {
      buf += d;
      reads++;
    });
    let closed = false;
    sock.on('close', () => (closed = true));
    for (const [i, accept] of [[1, 'application/json, text/event-stream'], [2, 'application/json'], [3, 'application/json, text/event-stream']]) {
      const body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'lookup', arguments: { query: `q${i}` } } });
      buf = '';
      reads = 0;
      sock.write(`POST /webmcp/mcp HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: application/json\r\nAccept: ${accept}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      const done = await poll(() => /\r\n0\r\n\r\n$/.test(buf) || (/Content-Length: \d+/i.test(buf) && buf.includes('}}')), { timeoutMs: 5000, intervalMs: 10 });
      assert.ok(done, `call ${i} not answered whole: ${buf}`);
      assert.match(buf, /^HTTP\/1\.1 200/);
      assert.doesNotMatch(buf, /Connection: close/i, buf);
      assert.match(buf, new RegExp(`"id":${i}`));
      assert.equal(closed, false, `the engine closed the connection after call ${i}`);
      // The head, the result and the body's end in one write (it was three: head, event, end).
      if (accept.includes('event-stream')) assert.equal(reads, 1, `call ${i}'s answer came in ${reads} reads: ${JSON.stringify(buf)}`);
    }
    sock.destroy();
  });

  it('the answer goes out as the page\'s is read: 12 MB to a client that reads late arrive whole on a kept connection; a client gone before the answer costs nothing', async () => {
    const big = 'x'.repeat(12 * 1024 * 1024);  // more than loopback's socket buffers take at once
    let release;
    const held = new Promise((r) => (release = r));
    let asked = false;
    const { eng, token } = await setup({
      handler: async (m) => {
        if (m.arguments.query === 'hold') {
          asked = true;
          await held;
          return 'late';
        }
        return m.arguments.query === 'big' ? big : `ok ${m.arguments.query}`;
      },
    });
    const post = (sock, id, query) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'lookup', arguments: { query } } });
      sock.write(`POST /webmcp/mcp HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    };
    // The answer's event out of a chunked body; null until the body's end has come.
    const eventOf = (raw) => {
      const at = raw.indexOf('\r\n\r\n');
      if (at < 0) return null;
      const chunks = readChunks(raw.slice(at + 4));
      return chunks.whole && chunks.after === '\r\n' ? chunks.body : null;
    };

    // A client that reads nothing while its answer is written: the socket takes part of it at once,
    // the request's coroutine sends the rest.
    const sock = net.connect(eng.port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    let buf = '';
    let closed = false;
    sock.setEncoding('latin1').on('data', (d) => (buf += d)).on('close', () => (closed = true));
    sock.pause();
    post(sock, 1, 'big');
    await sleep(400);
    sock.resume();
    assert.ok(await poll(() => eventOf(buf) !== null, { timeoutMs: 10000, intervalMs: 20 }), `no whole answer: ${buf.length} bytes`);
    const event = eventOf(buf);
    assert.match(event, /^event: message\ndata: /);
    const answer = JSON.parse(event.slice('event: message\ndata: '.length));
    assert.equal(answer.id, 1);
    assert.equal(answer.result.content[0].text, big);
    buf = '';
    post(sock, 2, 'next');
    assert.ok(await poll(() => eventOf(buf) !== null, { timeoutMs: 5000, intervalMs: 10 }), `no answer to the next call: ${buf}`);
    assert.match(eventOf(buf), /"id":2,"result":\{"content":\[\{"type":"text","text":"ok next"\}\]/);
    assert.equal(closed, false);
    sock.destroy();

    // A client that leaves while the page thinks: the page's answer goes nowhere, and nothing else is hurt.
    const gone = net.connect(eng.port, '127.0.0.1');
    await new Promise((r) => gone.once('connect', r));
    post(gone, 3, 'hold');
    assert.ok(await poll(() => asked, { timeoutMs: 5000, intervalMs: 10 }), 'the page was never asked');
    gone.destroy();
    await sleep(100);
    release();
    await sleep(100);
    const after = net.connect(eng.port, '127.0.0.1');
    await new Promise((r) => after.once('connect', r));
    let again = '';
    after.setEncoding('latin1').on('data', (d) => (again += d));
    post(after, 4, 'still here');
    assert.ok(await poll(() => eventOf(again) !== null, { timeoutMs: 5000, intervalMs: 10 }), `no answer after the client left: ${again}`);
    assert.match(eventOf(again), /"text":"ok still here"/);
    after.destroy();
    assert.equal((await request(eng, { path: '/health' })).status, 200);
  });

  it('SSE vs JSON by Accept: a slow call answers event: message / data: <json-rpc> with SSE, plain JSON without', async () => {
    const { eng, token } = await setup({ handler: async (m) => { await sleep(1200); return `slow ${m.arguments.query}`; } });
    const s = await mcpSession(eng, token);
    const call = { jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'lookup', arguments: { query: 'a' } } };
    const sse = await mcpPost(eng, token, call, { headers: s.headers, accept: 'application/json, text/event-stream' });
    assert.equal(sse.status, 200, sse.body);
    assert.match(sse.headers['content-type'] || '', /^text\/event-stream/, `content-type ${sse.headers['content-type']}`);
    assert.match(sse.body, /(^|\n)event: message\ndata: /, sse.body);
    for (const block of sse.body.split('\n\n').filter((b) => b.trim())) {
      assert.ok(block.startsWith(':') || /^event: message\ndata: .+$/.test(block) || /^(id: [^\n]+\n)?event: message\ndata: .+$/.test(block), `block: ${JSON.stringify(block)}`);
    }
    assert.deepEqual(parseMcpBody(sse), { jsonrpc: '2.0', id: 41, result: { content: [{ type: 'text', text: 'slow a' }], isError: false } });

    const json = await mcpPost(eng, token, { ...call, id: 42 }, { headers: s.headers, accept: 'application/json' });
    assert.equal(json.status, 200, json.body);
    assert.match(json.headers['content-type'] || '', /^application\/json/, `content-type ${json.headers['content-type']}`);
    assert.deepEqual(JSON.parse(json.body), { jsonrpc: '2.0', id: 42, result: { content: [{ type: 'text', text: 'slow a' }], isError: false } });
    // quick requests with Accept application/json are JSON too
    const list = await mcpPost(eng, token, { jsonrpc: '2.0', id: 43, method: 'tools/list' }, { headers: s.headers, accept: 'application/json' });
    assert.match(list.headers['content-type'] || '', /^application\/json/);
    assert.equal(list.json?.id, 43);
  });

  it('GET /webmcp/mcp: an SSE stream with Accept text/event-stream that carries tools/list_changed; 405 without', async () => {
    const { eng, token, page } = await setup();
    const s = await mcpSession(eng, token);
    const plain = await request(eng, { method: 'GET', path: '/webmcp/mcp', headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', ...s.headers } });
    assert.equal(plain.status, 405, `${plain.status} ${plain.body}`);
    // raw stream
    const raw = openStream(eng, '/webmcp/mcp', { headers: { Authorization: `Bearer ${token}`, ...s.headers } });
    const res = await raw.response;
    assert.equal(res.status, 200, raw.body);
    assert.match(res.headers['content-type'] || '', /^text\/event-stream/);
    // the SDK client (it opens the GET stream itself after initialize)
    const { client } = await sdkClient(eng, token);
    const changed = new Promise((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => resolve(n)));
    await sleep(300); // let the SDK's GET stream open
    await page.registerTool({ name: 'late_tool', description: 'Declared late.' });
    const n = await Promise.race([changed, sleep(4000).then(() => null)]);
    assert.ok(n, 'the SDK client got notifications/tools/list_changed');
    assert.equal(n.method, 'notifications/tools/list_changed');
    const ev = await raw.waitFor((e) => e.data?.method === 'notifications/tools/list_changed', 4000);
    assert.equal(ev.event, 'message');
    assert.equal(ev.data.jsonrpc, '2.0');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['late_tool', 'lookup']);
    // deregistering changes the list too
    const from = raw.events.length;
    page.send({ type: 'deregisterTool', name: 'late_tool' });
    await raw.waitFor((e) => e.data?.method === 'notifications/tools/list_changed', 4000, { from });
    raw.close();
  });

  it('callers: a web Origin gets 403 (even the page\'s own, with a valid bearer); no or a wrong bearer gets 401', async () => {
    const { eng, token, origin } = await setup();
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    for (const o of [origin, freshOrigin('evil'), `http://127.0.0.1:${eng.port}`]) {
      const r = await mcpPost(eng, token, init, { headers: { Origin: o } });
      assert.equal(r.status, 403, `Origin ${o}: ${r.status} ${r.body}`);
      const g = await request(eng, { method: 'GET', path: '/webmcp/mcp', headers: { Origin: o, Authorization: `Bearer ${token}`, Accept: 'text/event-stream' }, timeoutMs: 3000 });
      assert.equal(g.status, 403, `GET with Origin ${o}: ${g.status}`);
    }
    for (const [what, bearer] of [['none', undefined], ['wrong', 'x'.repeat(43)], ['grant token of the page', (await pairCli(eng, freshOrigin('g'))).token], ['suffix', `${token}x`]]) {
      const r = await mcpPost(eng, bearer, init);
      assert.equal(r.status, 401, `${what}: ${r.status} ${r.body}`);
    }
    const basic = await mcpPost(eng, null, init, { headers: { Authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` } });
    assert.equal(basic.status, 401);
    const ok = await mcpPost(eng, token, init);
    assert.equal(ok.status, 200);
  });

  it('malformed requests: invalid JSON → -32700; not JSON-RPC → -32600; GET without a bearer → 401', async () => {
    const { eng, token } = await setup();
    const bad = await request(eng, { method: 'POST', path: '/webmcp/mcp', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: '{not json' });
    assert.ok(bad.status === 400 || bad.status === 200, `${bad.status} ${bad.body}`);
    assert.equal(parseMcpBody(bad)?.error?.code, -32700, bad.body);
    const notRpc = await mcpPost(eng, token, { hello: 'world' });
    assert.ok(notRpc.status === 400 || notRpc.status === 200, `${notRpc.status} ${notRpc.body}`);
    assert.equal(notRpc.rpc?.error?.code, -32600, notRpc.body);
    const g = await request(eng, { method: 'GET', path: '/webmcp/mcp', headers: { Accept: 'text/event-stream' }, timeoutMs: 3000 });
    assert.equal(g.status, 401);
  });

  it('a body over 16 MB is refused with 413 (its head read, the body never), with or without a bearer', async () => {
    const { eng, token } = await setup();
    for (const auth of [`Authorization: Bearer ${token}\r\n`, '']) {
      const r = await rawHttp(eng, `POST /webmcp/mcp HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n${auth}` +
        'Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 99999999\r\n\r\n{');
      assert.equal(r.status, 413, r.raw);
      assert.deepEqual(r.json, { error: 'Request body too large' });
    }
    assert.equal((await mcpPost(eng, token, { jsonrpc: '2.0', id: 1, method: 'ping' })).status, 200, 'the endpoint goes on');
  });

  it('an ended session\'s channel token is refused (401)', async () => {
    const { eng, token, api, sid } = await setup();
    const s = await mcpSession(eng, token);
    const changes = openStream(eng, '/webmcp/mcp', { headers: { Authorization: `Bearer ${token}`, ...s.headers } });
    assert.equal((await changes.response).status, 200);
    assert.equal((await api.close(sid)).status, 200);
    const r = await s.call('tools/list');
    assert.equal(r.status, 401, r.body);
    // its stream of changes ends with it, at once (not at its next keep-alive, 20 s on), and with no change
    assert.equal(await Promise.race([changes.ended.then(() => 'ended'), sleep(3000).then(() => 'open')]), 'ended');
    assert.deepEqual(changes.events.filter((e) => e.data?.method), []);
    assert.deepEqual(changes.formatErrors, []);
  });

  it('leuria mcp-stdio <url> with LEURIA_MCP_TOKEN: an MCP stdio server (the SDK\'s StdioClientTransport) forwarding to the endpoint', async () => {
    const { eng, token, page } = await setup({
      handler: (m) => (m.arguments.query === 'fail' ? { error: 'Nothing found.' } : { hits: [m.arguments.query] }),
    });
    const transport = new StdioClientTransport({
      command: BIN,
      args: ['mcp-stdio', mcpUrl(eng)],
      env: cleanEnv({ LEURIA_MCP_TOKEN: token }),
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d) => (stderr += d));
    const client = new Client({ name: 'stdio-e2e', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    assert.equal(client.getServerVersion()?.name, 'webmcp', stderr);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['lookup']);
    assert.deepEqual(tools[0].inputSchema, LOOKUP.inputSchema);
    const r = await client.callTool({ name: 'lookup', arguments: { query: 'mug' } });
    assert.deepEqual(JSON.parse(r.content[0].text), { hits: ['mug'] });
    assert.equal(r.isError, false);
    assert.deepEqual(await client.callTool({ name: 'lookup', arguments: { query: 'fail' } }),
      { content: [{ type: 'text', text: 'Nothing found.' }], isError: true });
    await rejectsWith(client.request({ method: 'no/such', params: {} }, EmptyResultSchema), -32601);
    assert.deepEqual(await client.ping(), {});
    assert.equal(page.calls.length, 2);
    await client.close();
  });

  it('leuria mcp-stdio passes on the engine\'s notifications/tools/list_changed; once the session ends, it says why it stopped listening', async () => {
    const { eng, token, page, api, sid } = await setup();
    const transport = new StdioClientTransport({
      command: BIN, args: ['mcp-stdio', mcpUrl(eng)], env: cleanEnv({ LEURIA_MCP_TOKEN: token }), stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d) => (stderr += d));
    const client = new Client({ name: 'stdio-e2e', version: '1.0.0' });
    const changes = [];
    client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changes.push(n));
    await client.connect(transport);
    clients.push(client);
    assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: true });
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['lookup']);
    // The bridge opened the engine's stream at initialize: a tool the page declares now reaches the agent.
    await sleep(300);  // the engine has taken the bridge's GET (it left before initialize's POST)
    await page.registerTool({ name: 'late_tool', description: 'Declared late.' });
    assert.ok(await poll(() => changes.length >= 1, { timeoutMs: 5000 }), `notifications/tools/list_changed came; stderr: ${stderr}`);
    assert.equal(changes[0].method, 'notifications/tools/list_changed');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), ['late_tool', 'lookup']);
    page.send({ type: 'deregisterTool', name: 'late_tool' });
    assert.ok(await poll(() => changes.length >= 2, { timeoutMs: 5000 }), 'a tool taken away is a change too');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['lookup']);
    // The session ends: its stream ends, the next opening is refused (401), and the bridge says so once.
    assert.equal((await api.close(sid)).status, 200);
    assert.ok(await poll(() => /refused its stream of server messages \(HTTP 401: the session has ended/.test(stderr), { timeoutMs: 8000 }), stderr);
    assert.equal(stderr.match(/refused its stream/g).length, 1);
    await client.close();
  });

  it('leuria mcp-stdio: two page calls wait side by side; the one the page answers first comes back first', async () => {
    let release;
    const released = new Promise((r) => (release = r));
    const { eng, token, page } = await setup({
      handler: async (m) => {
        if (m.arguments.query === 'slow') await released;  // the visitor is still deciding
        return { hits: [m.arguments.query] };
      },
    });
    const transport = new StdioClientTransport({
      command: BIN, args: ['mcp-stdio', mcpUrl(eng)], env: cleanEnv({ LEURIA_MCP_TOKEN: token }), stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-e2e', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    const order = [];
    const slow = client.callTool({ name: 'lookup', arguments: { query: 'slow' } }).then((r) => {
      order.push('slow');
      return r;
    });
    assert.ok(await poll(() => page.calls.length === 1, { timeoutMs: 5000 }), 'the slow call reached the page');
    const fast = await client.callTool({ name: 'lookup', arguments: { query: 'fast' } });
    order.push('fast');
    assert.deepEqual(JSON.parse(fast.content[0].text), { hits: ['fast'] });
    assert.deepEqual(await client.ping(), {}, 'a ping while the call waits');
    release();
    assert.deepEqual(JSON.parse((await slow).content[0].text), { hits: ['slow'] });
    assert.deepEqual(order, ['fast', 'slow']);
    await client.close();
  });

  it('cancellation: notifications/cancelled ends the call at once and frees its place among the 64; no reply on an event stream, -32800 in JSON; the page\'s late answer goes nowhere', async () => {
    let release;
    const held = new Promise((r) => (release = r));
    const { eng, token, page } = await setup({
      handler: async (m) => {
        if (m.arguments.query.startsWith('hold')) await held;  // the visitor never decides
        return `ok ${m.arguments.query}`;
      },
    });
    // The SDK client (a real peer): 64 calls wait on the page, the 65th is refused, then every one is
    // cancelled through its signal (the SDK sends notifications/cancelled) and a new call gets through.
    const { client } = await sdkClient(eng, token);
    const errors = [];
    client.onerror = (e) => errors.push(String(e));
    const aborts = [];
    const waiting = [];
    for (let i = 0; i < 64; i++) {
      const ac = new AbortController();
      aborts.push(ac);
      waiting.push(client.callTool({ name: 'lookup', arguments: { query: `hold ${i}` } }, undefined, { signal: ac.signal }).then(
        () => 'answered', (e) => (e.name === 'AbortError' || /abort|cancel/i.test(String(e)) ? 'cancelled' : String(e))));
    }
    assert.ok(await poll(() => page.calls.length === 64, { timeoutMs: 10000 }), `${page.calls.length} calls at the page`);
    await rejectsWith(client.callTool({ name: 'lookup', arguments: { query: 'one too many' } }), -32000, 'Too many calls');
    for (const ac of aborts) ac.abort();
    assert.deepEqual(new Set(await Promise.all(waiting)), new Set(['cancelled']));
    const fresh = await client.callTool({ name: 'lookup', arguments: { query: 'fresh' } }, undefined, { timeout: 5000 });
    assert.equal(fresh.content[0].text, 'ok fresh');

    // On the wire: a cancelled call's event stream ends with no message; a JSON answer says -32800.
    const s = await mcpSession(eng, token);
    const call = (id, query) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'lookup', arguments: { query } } });
    const cancel = (requestId) => mcpPost(eng, token, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'user' } }, { headers: s.headers });
    const sse = mcpPost(eng, token, call('sse-1', 'hold sse'), { headers: s.headers, accept: 'application/json, text/event-stream' });
    const json = mcpPost(eng, token, call(77, 'hold json'), { headers: s.headers, accept: 'application/json' });
    assert.ok(await poll(() => page.calls.length === 67, { timeoutMs: 5000 }), `${page.calls.length} calls at the page`);
    // another MCP session's cancel for the same id ends nothing
    assert.equal((await mcpPost(eng, token, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77 } },
      { headers: { ...s.headers, 'Mcp-Session-Id': 'another' } })).status, 202);
    assert.equal((await cancel('sse-1')).status, 202);
    assert.equal((await cancel(77)).status, 202);
    const [sseAnswer, jsonAnswer] = await Promise.all([sse, json]);
    assert.equal(sseAnswer.status, 200);
    assert.ok(!/data:/.test(sseAnswer.body), `no message: ${JSON.stringify(sseAnswer.body)}`);
    assert.deepEqual(JSON.parse(jsonAnswer.body), { jsonrpc: '2.0', id: 77, error: { code: -32800, message: 'The call was cancelled' } });

    // The page answers them all, late: nothing reaches anyone, and the endpoint goes on.
    release();
    await sleep(200);
    const after = await client.callTool({ name: 'lookup', arguments: { query: 'after' } }, undefined, { timeout: 5000 });
    assert.equal(after.content[0].text, 'ok after');
    assert.deepEqual(errors.filter((e) => /unknown message ID/i.test(e)), [], 'no reply came for a cancelled call');
  });

  it('cancellation: a client whose connection closes while its call waits frees the call\'s place', async () => {
    const { eng, token, page } = await setup({
      timings: { mcpKeepAliveMs: 100 },
      handler: async (m) => (m.arguments.query === 'hold' ? new Promise(() => {}) : `ok ${m.arguments.query}`),
    });
    const socks = [];
    for (let i = 0; i < 64; i++) {
      const body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'lookup', arguments: { query: 'hold' } } });
      const sock = net.connect(eng.port, '127.0.0.1');
      sock.on('error', () => {});
      await new Promise((r) => sock.once('connect', r));
      sock.write(`POST /webmcp/mcp HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      socks.push(sock);
    }
    assert.ok(await poll(() => page.calls.length === 64, { timeoutMs: 10000 }), `${page.calls.length} calls at the page`);
    const full = await mcpPost(eng, token, { jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'lookup', arguments: { query: 'x' } } });
    assert.match(full.rpc?.error?.message ?? '', /Too many calls/);
    for (const sock of socks) sock.destroy();
    // Each is noticed at its next keep-alive, which fails to write.
    const freed = await poll(async () => {
      const r = await mcpPost(eng, token, { jsonrpc: '2.0', id: 'y', method: 'tools/call', params: { name: 'lookup', arguments: { query: 'y' } } });
      return r.rpc?.result?.content?.[0]?.text === 'ok y';
    }, { timeoutMs: 10000, intervalMs: 200 });
    assert.ok(freed, 'the places of the calls whose clients left were freed');
  });

  it('leuria mcp-stdio: a call the agent cancels ends at the page\'s queue, and gets no made-up reply', async () => {
    const { eng, token, page } = await setup({
      handler: async (m) => (m.arguments.query === 'hold' ? new Promise(() => {}) : `ok ${m.arguments.query}`),
    });
    const transport = new StdioClientTransport({
      command: BIN, args: ['mcp-stdio', mcpUrl(eng)], env: cleanEnv({ LEURIA_MCP_TOKEN: token }), stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr.on('data', (d) => (stderr += d));
    const client = new Client({ name: 'stdio-e2e', version: '1.0.0' });
    const errors = [];
    client.onerror = (e) => errors.push(String(e));
    await client.connect(transport);
    clients.push(client);
    const aborts = [];
    const waiting = [];
    for (let i = 0; i < 64; i++) {
      const ac = new AbortController();
      aborts.push(ac);
      waiting.push(client.callTool({ name: 'lookup', arguments: { query: 'hold' } }, undefined, { signal: ac.signal }).catch(() => 'cancelled'));
    }
    assert.ok(await poll(() => page.calls.length === 64, { timeoutMs: 10000 }), `${page.calls.length} calls at the page`);
    for (const ac of aborts) ac.abort();
    await Promise.all(waiting);
    // the engine freed their places: a new call is answered, not refused as the 65th
    const fresh = await client.callTool({ name: 'lookup', arguments: { query: 'fresh' } }, undefined, { timeout: 5000 });
    assert.equal(fresh.content[0].text, 'ok fresh');
    await sleep(200);
    assert.deepEqual(errors.filter((e) => /unknown message ID/i.test(e)), [], 'no reply was made up for a cancelled call');
    assert.ok(!/held no reply/.test(stderr), stderr);
    await client.close();
  });

  it('leuria mcp-stdio: a wrong token surfaces as an error to the client, not a hang', async () => {
    const { eng } = await setup();
    const transport = new StdioClientTransport({
      command: BIN, args: ['mcp-stdio', mcpUrl(eng)], env: cleanEnv({ LEURIA_MCP_TOKEN: 'wrong' }), stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-e2e', version: '1.0.0' });
    clients.push(client);
    const r = await Promise.race([
      client.connect(transport).then(() => 'connected', (e) => `error: ${e.message}`),
      sleep(8000).then(() => 'hang'),
    ]);
    assert.notEqual(r, 'hang', 'initialize with a wrong token must fail within 8 s');
    assert.notEqual(r, 'connected', 'a wrong token must not connect');
  });
});
