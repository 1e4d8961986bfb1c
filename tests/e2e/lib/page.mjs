// Page tools for the leuria end-to-end tests: registration tokens, WebSockets (wsOpen, recordSocket, registerPage),
// the page's end of the tool channel (PageChannel, pageSession) and raw MCP clients for /webmcp/mcp
// (mcpPost, parseMcpBody, mcpSession).

import assert from 'node:assert/strict';
import { sleep, tryJson } from './engine.mjs';
import { request } from './http.mjs';
import { portOf } from './internal.mjs';
import { freshOrigin, pairCli } from './pairing.mjs';
import { sessionApi } from './sessions.mjs';

/** {server, token} inside a session's registrationToken (base64 JSON). */
export function decodeRegistration(blob) {
  return JSON.parse(Buffer.from(blob, 'base64').toString('utf8'));
}

/** `ws://127.0.0.1:<port><p>` for an engine (or a port). */
export function wsUrl(target, p) {
  return `ws://127.0.0.1:${portOf(target)}${p}`;
}

/**
 * Open a WebSocket with the `ws` package. Resolves {ws} once open, or {status, headers, body} when the server
 * answers the upgrade with a plain HTTP response (401, 403, …). Rejects on a network error or after timeoutMs.
 *   origin   Origin header (omitted: none, like a local process)
 */
export async function wsOpen(url, { origin, headers = {}, timeoutMs = 5000 } = {}) {
  const { default: WebSocket } = await import('ws');
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { ...(origin ? { Origin: origin } : {}), ...headers }, handshakeTimeout: timeoutMs });
    let settled = false;
    const done = (err, v) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(v);
    };
    const timer = setTimeout(() => {
      ws.terminate();
      done(new Error(`WebSocket ${url} did not open within ${timeoutMs} ms`));
    }, timeoutMs);
    ws.on('unexpected-response', (req, res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      const finish = () => {
        req.destroy();
        done(null, { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
      };
      res.on('end', finish);
      res.on('error', finish);
      res.on('close', finish);
    });
    ws.on('open', () => done(null, { ws }));
    ws.on('error', (e) => done(e));
  });
}

/**
 * A WebSocket that records every JSON message: {ws, messages, waitFor(pred, ms), send(obj), close(), closed}.
 * `closed` resolves {code, reason} when the socket closes.
 */
export function recordSocket(ws) {
  const messages = [];
  const waiters = new Set();
  let closeInfo = null;
  const closed = new Promise((resolve) => {
    ws.on('close', (code, reason) => {
      closeInfo = { code, reason: reason.toString() };
      resolve(closeInfo);
      for (const w of waiters) w();
    });
  });
  ws.on('error', () => {});
  ws.on('message', (data, isBinary) => {
    const text = data.toString('utf8');
    messages.push(isBinary ? { binary: text } : (tryJson(text) ?? { unparsable: text }));
    for (const w of waiters) w();
  });
  const rec = {
    ws, messages, closed,
    get closeInfo() { return closeInfo; },
    send: (obj) => ws.send(typeof obj === 'string' ? obj : JSON.stringify(obj)),
    close: () => {
      try {
        ws.close();
      } catch {}
    },
    terminate: () => ws.terminate(),
    /** First message (from index `from`) matching pred (a function, or a `type` string). Rejects on timeout or close. */
    waitFor(pred, ms = 5000, { from = 0 } = {}) {
      const test = typeof pred === 'string' ? (m) => m.type === pred : pred;
      return new Promise((resolve, reject) => {
        const check = () => {
          for (let k = from; k < messages.length; k++) {
            if (test(messages[k])) {
              done();
              resolve(messages[k]);
              return;
            }
          }
          if (closeInfo) {
            done();
            reject(new Error(`socket closed (${JSON.stringify(closeInfo)}) before the awaited message (${pred}); messages: ${JSON.stringify(messages).slice(0, 2000)}`));
          }
        };
        const t = setTimeout(() => {
          done();
          reject(new Error(`timed out after ${ms} ms waiting for a message (${pred}); messages: ${JSON.stringify(messages).slice(0, 2000)}`));
        }, ms);
        const done = () => {
          clearTimeout(t);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    /** Resolves {code, reason} when closed within ms, else rejects. */
    waitClosed(ms = 5000) {
      return Promise.race([closed, sleep(ms).then(() => { throw new Error(`socket still open after ${ms} ms`); })]);
    },
  };
  return rec;
}

/**
 * Register at /webmcp/register with `token` (the whole blob or the inner token).
 * Resolves {reply, closed: {code, reason}|null, messages}: the engine's first message, and whether it closed the socket after.
 * `message` overrides what is sent (any string or object).
 */
export async function registerPage(target, token, { origin, message, timeoutMs = 5000 } = {}) {
  const r = await wsOpen(wsUrl(target, '/webmcp/register'), { origin, timeoutMs });
  if (!r.ws) throw new Error(`register upgrade refused: ${r.status} ${r.body}`);
  const s = recordSocket(r.ws);
  s.send(message !== undefined ? message : { type: 'register', token });
  const reply = await s.waitFor(() => true, timeoutMs);
  const closed = await s.waitClosed(timeoutMs).catch(() => null);
  if (!closed) s.terminate();
  return { reply, closed, messages: s.messages };
}

/**
 * The page's end of the tool channel.
 *   const page = await PageChannel.connect(engine, registrationToken, { origin, tools: [{name, description, inputSchema}],
 *                                           handler: async (msg) => result | {error} | throw })
 *   page.messages (everything received), page.calls (callTool messages), page.waitFor(pred|type, ms)
 *   await page.registerTool({name, ...}) (waits for the ack), page.send(obj), page.close()
 *   await page.reconnect() (a new socket with the same channel token; the old one is dropped)
 * `handler(msg)` answers callTool / readResource / getPrompt: its return value is sent as `result`;
 * a thrown Error (or a returned {error}) as `error`; returning PageChannel.NO_ANSWER sends nothing.
 * Without a handler, callTool gets result "ok". Pings are answered with pong unless `answerPings: false`.
 */
export class PageChannel {
  static NO_ANSWER = Symbol('no answer');

  static async connect(target, registrationToken, opts = {}) {
    const { reply } = await registerPage(target, registrationToken, { origin: opts.origin });
    if (reply.type !== 'registerSuccess') throw new Error(`register failed: ${JSON.stringify(reply)}`);
    const page = new PageChannel(target, reply.channel, reply.token, opts);
    await page.open();
    for (const t of opts.tools || []) await page.registerTool(t);
    return page;
  }

  constructor(target, channel, token, { origin, handler, answerPings = true } = {}) {
    this.target = target;
    this.channel = channel;
    this.token = token;
    this.origin = origin;
    this.handler = handler;
    this.answerPings = answerPings;
    this.messages = [];
    this.sockets = [];
  }

  get url() {
    return wsUrl(this.target, `${this.channel}?token=${encodeURIComponent(this.token)}`);
  }

  get calls() {
    return this.messages.filter((m) => m.type === 'callTool');
  }

  async open() {
    const r = await wsOpen(this.url, { origin: this.origin });
    if (!r.ws) throw new Error(`channel upgrade refused: ${r.status} ${r.body}`);
    const s = recordSocket(r.ws);
    r.ws.on('message', (data) => {
      const m = tryJson(data.toString('utf8'));
      if (!m || typeof m !== 'object') return;
      this.messages.push(m);
      this.#onMessage(s, m).catch(() => {});
    });
    this.sock = s;
    this.sockets.push(s);
    return s;
  }

  async #onMessage(s, m) {
    if (m.type === 'ping' && this.answerPings) return s.send({ type: 'pong' });
    const kinds = { callTool: 'toolResponse', readResource: 'resourceResponse', getPrompt: 'promptResponse' };
    const kind = kinds[m.type];
    if (!kind) return;
    let out;
    try {
      const r = this.handler ? await this.handler(m) : m.type === 'callTool' ? 'ok' : {};
      if (r === PageChannel.NO_ANSWER) return;
      out = r && typeof r === 'object' && 'error' in r && Object.keys(r).length === 1 ? { error: r.error } : { result: r };
    } catch (e) {
      out = { error: e.message };
    }
    if (s.ws.readyState === 1) s.send({ type: kind, id: m.id, ...out });
  }

  send(obj) {
    this.sock.send(obj);
  }

  waitFor(pred, ms = 5000, opts) {
    return this.sock.waitFor(pred, ms, opts);
  }

  /** Send registerTool and wait for its ack (or error). Resolves the engine's answer. */
  async registerTool(tool, { nested = false } = {}) {
    const from = this.sock.messages.length;
    this.send(nested ? { type: 'registerTool', tool } : { type: 'registerTool', ...tool });
    return this.sock.waitFor((m) => (m.type === 'ack' && m.name === tool.name) || m.type === 'error', 5000, { from });
  }

  async reconnect() {
    return this.open();
  }

  close() {
    for (const s of this.sockets) s.close();
  }
}

/**
 * A paired page with a prepared session and an open tool channel:
 *   const { origin, token, api, sid, prep, page, stream } = await pageSession(engine, { prompt, tools, handler, approve: true })
 * The stream is opened before approve. `approve: false` leaves the session pending.
 */
export async function pageSession(engine, { prompt, tools = [], handler, approve = true, prepare = {}, origin = freshOrigin('page') } = {}) {
  const { token } = await pairCli(engine, origin);
  const api = sessionApi(engine, { origin, token });
  const prep = await api.prepare({ ...(prompt !== undefined ? { prompt } : {}), ...prepare });
  assert.equal(prep.status, 201, `prepare: ${prep.status} ${prep.body}`);
  const sid = prep.json.sessionId;
  const page = await PageChannel.connect(engine, prep.json.registrationToken, { origin, tools, handler });
  const stream = api.stream(sid);
  await stream.response;
  if (approve) {
    const a = await api.approve(sid);
    assert.equal(a.status, 200, `approve: ${a.status} ${a.body}`);
  }
  return { origin, token, api, sid, prep, page, stream };
}

/** The MCP endpoint of an engine. */
export function mcpUrl(target) {
  return `http://127.0.0.1:${portOf(target)}/webmcp/mcp`;
}

/**
 * One raw JSON-RPC POST to /webmcp/mcp. `accept` defaults to 'application/json, text/event-stream'.
 * Resolves the `request` result plus `rpc`: the JSON-RPC message (parsed from JSON or from the SSE `data:` line).
 */
export async function mcpPost(target, token, message, { accept = 'application/json, text/event-stream', headers = {}, timeoutMs = 8000 } = {}) {
  const h = { 'Content-Type': 'application/json', Accept: accept, ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  const res = await request(target, { method: 'POST', path: '/webmcp/mcp', headers: h, body: JSON.stringify(message), timeoutMs });
  res.rpc = parseMcpBody(res);
  return res;
}

/** The JSON-RPC message in an MCP HTTP response body (JSON, or the last SSE `data:` of event `message`). */
export function parseMcpBody(res) {
  const ct = res.headers['content-type'] || '';
  if (/text\/event-stream/i.test(ct)) {
    const datas = [];
    for (const block of res.body.split(/\r?\n\r?\n/)) {
      const lines = block.split(/\r?\n/).filter((l) => l && !l.startsWith(':'));
      const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (data) datas.push(tryJson(data));
    }
    return datas.filter(Boolean).at(-1);
  }
  return res.json;
}

/**
 * A raw MCP client session over /webmcp/mcp: initialize (+ notifications/initialized), then `call(method, params)`.
 * Resolves {init, sessionId, version, call, notify}. call() resolves mcpPost's result (`.rpc` is the JSON-RPC answer).
 */
export async function mcpSession(target, token, { protocolVersion = '2025-06-18', accept, timeoutMs } = {}) {
  const init = await mcpPost(target, token, {
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'leuria-e2e', version: '1.0.0' } },
  }, { accept });
  if (init.status !== 200 || !init.rpc?.result) throw new Error(`initialize: ${init.status} ${init.body}`);
  const sessionId = init.headers['mcp-session-id'];
  const version = init.rpc.result.protocolVersion;
  const headers = { 'MCP-Protocol-Version': version };
  if (sessionId) headers['Mcp-Session-Id'] = sessionId;
  let n = 1;
  const s = {
    init, sessionId, version, headers,
    call: (method, params, opts = {}) =>
      mcpPost(target, token, { jsonrpc: '2.0', id: n++, method, ...(params !== undefined ? { params } : {}) }, { accept, timeoutMs, ...opts, headers: { ...headers, ...(opts.headers || {}) } }),
    notify: (method, params, opts = {}) =>
      mcpPost(target, token, { jsonrpc: '2.0', method, ...(params !== undefined ? { params } : {}) }, { accept, ...opts, headers: { ...headers, ...(opts.headers || {}) } }),
  };
  const r = await s.notify('notifications/initialized');
  if (r.status !== 202) throw new Error(`notifications/initialized: ${r.status} ${r.body}`);
  return s;
}
