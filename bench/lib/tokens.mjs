// What the token scenarios (2, 3, 5, 7, 9) share: the timestamped OpenAI-compatible upstream
// (bench/fakes/openai-upstream.mjs), an engine configured to use it, the Node relay's ACP variant, a
// raw-socket client that reads a stream and times every token in it, and running the driver on the
// server's CPU while it is a latency client.
//
// Token timing: the upstream writes `T<µs>;` (its CLOCK_MONOTONIC in µs) into each chunk's content;
// every relay carries the content on (the engine and the Node relay inside `event: chunk` JSON
// strings, possibly several merged into one event; nginx and the floors as the upstream's bytes), and
// the client subtracts it from its own clock (also CLOCK_MONOTONIC) the moment the bytes are read.

import net from 'node:net';
import path from 'node:path';
import { sleep } from '../../tests/e2e/lib/engine.mjs';
import { loadSites } from '../../tests/e2e/lib/load.mjs';
import { FAKE_ACP, sessionApi } from '../../tests/e2e/lib/sessions.mjs';
import { startEngine } from './contenders.mjs';
import { ROOT } from './env.mjs';
import { CPU, pin, spawnPinned } from './proc.mjs';

export const nowUs = () => Number(process.hrtime.bigint()) / 1000;

/** bench/fakes/openai-upstream.mjs on the helper CPU (not measured). */
export async function startOpenAiUpstream() {
  const h = await spawnPinned(process.execPath, [path.join(ROOT, 'bench/fakes/openai-upstream.mjs'), '0'], { cpu: CPU.helper });
  return Object.assign(h, { name: 'upstream', url: `http://127.0.0.1:${h.port}/v1` });
}

/** The user message that scripts the upstream (see openai-upstream.mjs): every contender sends it. */
export const script = ({ count, every = 0, pad = 0, tag = '' }) => `bench count=${count} every=${every} pad=${pad}${tag ? ` tag=${tag}` : ''}`;

/** The chat request the byte relays and the direct client send (the engine builds its own). */
export const chatBody = (prompt) => JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: prompt }], stream: true });

/**
 * The engine with the upstream as its default AI (llm:bench, an `openai` provider) and `sites`
 * connected sites (grants written before start, 4 live sessions each). CPU 0, every thread.
 */
export async function startLlmEngine(upstream, { sites = 1, timings } = {}) {
  const { sites: list, file } = loadSites(sites);
  const eng = await startEngine({
    timings,
    files: {
      'config.json': { agent: 'llm:bench' },
      'providers.json': { providers: [{ id: 'bench', kind: 'openai', name: 'Bench', baseUrl: upstream.url }] },
      'grants.json': file,
    },
  });
  eng.sites = list;
  return eng;
}

/**
 * The engine with the scripted ACP agent (tests/fakes/acp-agent.mjs, mode many-chunks) as its default
 * AI. The agent is started through `taskset -c <helper>`, so it runs on the helper CPU from its first
 * instruction (the engine's children inherit CPU 0 otherwise; pinning after the spawn would race the
 * agent's first chunks).
 */
export async function startAcpEngine(agentEnv, { sites = 1 } = {}) {
  const { sites: list, file } = loadSites(sites);
  const eng = await startEngine({
    files: {
      'config.json': { agent: 'flood', agents: { flood: { name: 'Flood', command: '/usr/bin/taskset', args: ['-c', String(CPU.helper), process.execPath, FAKE_ACP], env: agentEnv } } },
      'grants.json': file,
    },
  });
  eng.sites = list;
  return eng;
}

/** The Node relay with its ACP routes, spawning `agentCommand` (an argv array) per stream. */
export async function startNodeAcpRelay(agentCommand, env) {
  const h = await spawnPinned(process.execPath, [path.join(ROOT, 'bench/baselines/node-relay.mjs'), '0', '0'], {
    env: { ...process.env, ...env, BENCH_ACP_AGENT: JSON.stringify(agentCommand) },
  });
  return Object.assign(h, { name: 'node', pids: () => [h.pid] });
}

/** The agent's argv for the Node relay: the same scripted agent on the helper CPU. */
export const acpAgentArgv = () => ['/usr/bin/taskset', '-c', String(CPU.helper), process.execPath, FAKE_ACP];

/**
 * Run `fn` with this process (the driver, every thread) on `cpu`, then back on the helper CPU: the
 * driver is the client of the token scenarios, and a latency client belongs on the server's CPU.
 */
export async function onCpu(cpu, fn) {
  pin(process.pid, cpu);
  try {
    return await fn();
  } finally {
    pin(process.pid, CPU.helper);
  }
}

/** One request on a fresh connection whose answer is not waited for (an approve, a prompt). */
export function fire(port, { method = 'POST', path: p, headers = {}, body = '' }) {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.setNoDelay(true);
    let buf = '';
    s.setEncoding('latin1');
    s.on('connect', () => s.write(requestText(port, { method, path: p, headers: { ...headers, Connection: 'close' }, body })));
    s.on('data', (d) => (buf += d));
    s.on('error', reject);
    s.on('close', () => resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(buf)?.[1] || 0), body: buf.slice(buf.indexOf('\r\n\r\n') + 4) }));
  });
}

function requestText(port, { method, path: p, headers = {}, body = '' }) {
  const h = { Host: `127.0.0.1:${port}`, ...headers };
  if (body || method === 'POST') h['Content-Length'] = Buffer.byteLength(body);
  return `${method} ${p} HTTP/1.1\r\n${Object.entries(h).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`;
}

const TOKEN = /T(\d+);/g;

/**
 * Read one streamed answer on a fresh connection and time its tokens.
 *   readTokens(port, {method, path, headers, body, end, keep})
 *     end   the text that ends it (`event: turn_completed` for the page's events, `data: [DONE]` for
 *           the upstream's own bytes): tokens are counted up to it (turn_completed repeats the text)
 *     keep  keep each token's latency (default true; false keeps only the count and the first one)
 *     token, sep  what a token is (a global RegExp; group 1 = its write time in µs) and the character
 *           that ends one (the text is scanned up to the last one read); default /T(\d+);/g and ';'.
 *           Scenario 3 counts the ACP agent's `chunk <i>\n` pieces with sep '\n' (an event's end)
 * Returns {opened (resolves at the response head, with its status), done (resolves at `end` or when
 * the socket closes: {tokens, lat: [µs], firstAt, lastAt, bytes, ended, status}), waitText(s), sock}.
 * Tokens are found in the body as read (chunked framing undone): `T<digits>;` occurs nowhere else.
 */
export function readTokens(port, { method = 'GET', path: p, headers = {}, body = '', end, keep = true, token = TOKEN, sep = ';', sock: given } = {}) {
  const s = given || net.connect({ host: '127.0.0.1', port });
  s.setNoDelay(true);
  s.setEncoding('latin1');
  const out = { tokens: 0, lat: keep ? [] : null, firstAt: 0, lastAt: 0, bytes: 0, ended: false, status: 0 };
  let pending = '';
  let head = true;
  let prefix = '';  // what came before the first token, for waitText (ready, webmcp_ready)
  let textWaiters = [];
  let openedResolve;
  let openedReject;
  const opened = new Promise((res, rej) => {
    openedResolve = res;
    openedReject = rej;
  });
  opened.catch(() => {});
  let doneResolve;
  const done = new Promise((r) => (doneResolve = r));
  const finish = () => {
    if (out.ended) return;
    out.ended = true;
    s.off('data', onData);
    openedReject(new Error(`closed before a response head (${out.bytes} bytes)`));
    for (const w of textWaiters) w.reject(new Error(`stream ended before ${JSON.stringify(w.text)}`));
    textWaiters = [];
    doneResolve(out);
  };
  const scan = (text, t) => {
    token.lastIndex = 0;
    let m;
    while ((m = token.exec(text))) {
      out.tokens++;
      if (!out.firstAt) out.firstAt = t;
      out.lastAt = t;
      if (keep) out.lat.push(t - Number(m[1]));
    }
  };
  // Chunked transfer encoding is undone first: a relay that re-chunks (nginx) may cut a token in two
  // with a chunk boundary. latin1 keeps one character per byte, so chunk sizes count characters.
  let chunked = false;
  let need = 0;      // bytes left in the current chunk
  let skip = 0;      // the CRLF after a chunk's data
  let sizeLine = '';
  const dechunk = (d) => {
    if (!chunked) return d;
    let body = '';
    let i = 0;
    while (i < d.length) {
      if (need > 0) {
        const take = Math.min(need, d.length - i);
        body += d.slice(i, i + take);
        i += take;
        need -= take;
        if (!need) skip = 2;
      } else if (skip > 0) {
        const k = Math.min(skip, d.length - i);
        i += k;
        skip -= k;
      } else {
        const nl = d.indexOf('\n', i);
        if (nl < 0) {
          sizeLine += d.slice(i);
          break;
        }
        sizeLine += d.slice(i, nl);
        i = nl + 1;
        need = parseInt(sizeLine, 16) || 0;
        sizeLine = '';
        if (!need) break;  // the last chunk
      }
    }
    return body;
  };
  const onData = (raw) => {
    const t = nowUs();
    out.bytes += raw.length;
    let d = raw;
    if (head) {
      pending += raw;
      const i = pending.indexOf('\r\n\r\n');
      if (i < 0) return;
      out.status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(pending)?.[1] || 0);
      chunked = /\r\ntransfer-encoding:\s*chunked/i.test(pending.slice(0, i));
      head = false;
      d = pending.slice(i + 4);
      pending = '';
      openedResolve(out.status);
    }
    d = dechunk(d);
    pending += d;
    if (!out.firstAt && prefix.length < 65536) {
      prefix += d;
      textWaiters = textWaiters.filter((w) => !(prefix.includes(w.text) && (w.resolve(), true)));
    }
    const e = end ? pending.indexOf(end) : -1;
    if (e >= 0) {
      scan(pending.slice(0, e), t);
      finish();
      return;
    }
    const last = pending.lastIndexOf(sep);
    if (last >= 0) {
      scan(pending.slice(0, last + 1), t);
      // keep the tail, and enough before it that `end` split across two reads is still found
      pending = pending.slice(Math.max(0, last + 1 - (end ? end.length : 0)));
      if (end) pending = pending.replace(token, '');
    }
  };
  s.on('data', onData);
  s.on('close', finish);
  s.on('error', () => {});
  const send = () => s.write(requestText(port, { method, path: p, headers, body }));
  if (s.connecting) s.once('connect', send);
  else send();
  return {
    opened, done, sock: s, out, prefix: () => prefix,
    waitText: (text) => (prefix.includes(text) ? Promise.resolve() : new Promise((resolve, reject) => textWaiters.push({ text, resolve, reject }))),
    close: () => s.destroy(),
  };
}

/** A page's session on the engine: prepared, its stream open (a readTokens reader), not yet approved. */
export async function openSession(eng, site, { prompt, end = 'event: turn_completed', keep = true, token, sep } = {}) {
  const api = sessionApi(eng, site);
  const r = await api.prepare(prompt ? { prompt } : {});
  if (r.status !== 201) throw new Error(`prepare: ${r.status} ${r.body}`);
  const id = r.json.sessionId;
  const headers = { Origin: site.origin, Authorization: `Bearer ${site.token}`, Accept: 'text/event-stream' };
  const reader = readTokens(eng.port, { path: `/session/${encodeURIComponent(id)}/stream`, headers, end, keep, token, sep });
  const status = await reader.opened;
  if (status !== 200) throw new Error(`stream: ${status}`);
  const post = (action, body) => fire(eng.port, {
    path: `/session/${encodeURIComponent(id)}/${action}`,
    headers: { Origin: site.origin, Authorization: `Bearer ${site.token}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : '',
  });
  return { api, id, reader, post, close: () => api.close(id).catch(() => {}) };
}

/** The upstream's /stats for a tag. */
export async function upstreamStats(upstream, tag) {
  const r = await fire(upstream.port, { method: 'GET', path: `/stats?tag=${encodeURIComponent(tag)}` });
  return JSON.parse(r.body);
}

/** Resolve when `pred()` holds, polling every `ms`; false after `timeoutMs`. */
export async function until(pred, { timeoutMs = 30000, ms = 20 } = {}) {
  const end = performance.now() + timeoutMs;
  while (performance.now() < end) {
    if (await pred()) return true;
    await sleep(ms);
  }
  return false;
}

/** A promise that rejects after `ms` with `what`, for racing a stream that may never end. */
export function within(promise, ms, what) {
  let t;
  return Promise.race([promise, new Promise((_, rej) => (t = setTimeout(() => rej(new Error(`${what}: not within ${ms} ms`)), ms)))]).finally(() => clearTimeout(t));
}

/**
 * One streamed answer to `prompt` through contender `kind` ('direct' and the byte relays 'nginx',
 * 'floor' forward the upstream's own request and bytes; 'node' is the Node relay's /llm; 'engine' a
 * page's session, approved and idle (`ready`) before the turn). Returns {go(), close()}: go() starts
 * the answer and returns its readTokens reader, so a measured window can open just before it.
 */
export async function prepareTurn(kind, srv, prompt, { site, keep = true } = {}) {
  if (kind === 'engine') {
    const sess = await openSession(srv, site, { keep });
    const a = await sess.post('approve');
    if (a.status !== 200) throw new Error(`approve: ${a.status} ${a.body}`);
    await within(sess.reader.waitText('event: ready'), 10000, 'the session never became ready');
    return {
      session: sess,
      go: () => {
        sess.prompted = sess.post('prompt', { prompt }).then((r) => {
          if (r.status !== 200) throw new Error(`prompt: ${r.status} ${r.body}`);
        });
        return sess.reader;
      },
      close: async () => {
        sess.reader.close();
        await sess.close();
      },
    };
  }
  let reader;
  const go = () => {
    reader = kind === 'node'
      ? readTokens(srv.port, { path: `/llm?prompt=${encodeURIComponent(prompt)}`, end: 'event: turn_completed', keep })
      : readTokens(srv.port, {
        method: 'POST', path: '/v1/chat/completions', end: 'data: [DONE]', keep,
        headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' }, body: chatBody(prompt),
      });
    return reader;
  };
  return { go, close: async () => reader?.close() };
}
