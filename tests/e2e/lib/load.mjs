// Load on a real engine, for tests/e2e/load.test.mjs and bench/load/run: connections held in three
// kinds (idle sockets, session event streams, WebMCP tool channels), a client that keeps being served
// meanwhile (GET /health and session turns with the scripted agent), and the engine's resident memory
// and descriptors from /proc. Not re-exported by helpers.mjs: import it directly.

import fs from 'node:fs';
import net from 'node:net';
import { sleep } from './engine.mjs';
import { local, request } from './http.mjs';
import { nonce, pairCli, sha256hex } from './pairing.mjs';
import { PageChannel } from './page.mjs';
import { fdCount } from './proc.mjs';
import { rssKb, sessionApi, startFakeEngine } from './sessions.mjs';

// openStream drops a stream after its timeoutMs (60 s by default): these are held for the whole run.
const FOREVER = 24 * 3600 * 1000;

/** An origin may hold 4 live sessions (spec, "Sessions"): load spreads its sessions over several sites. */
export const SESSIONS_PER_ORIGIN = 4;

/** The soft open-files limit of this process (RLIMIT_NOFILE, from /proc/self/limits); Infinity when unlimited. */
export function openFilesLimit() {
  const m = /^Max open files\s+(\S+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
  return !m || m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

/** Whether the binary is a sanitizer build (ASan's shadow memory and quarantine make RSS say little). */
export function isSanitizerBuild(bin) {
  return /asan/i.test(bin);
}

/** {n, p50, p90, p99, max} in ms of a list of latencies (null fields when empty). */
export function percentiles(list) {
  const s = [...list].sort((a, b) => a - b);
  const at = (q) => (s.length ? s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] : null);
  return { n: s.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: s.length ? s[s.length - 1] : null };
}

/** Run fn over items, at most `n` at a time; resolves the results in order. */
export async function pool(items, n, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

/**
 * `count` connected sites, as grants.json holds them after pairing: [{origin, token}] and the file's content.
 * Pairing each through the approval page would only slow the run down; the client's own site is paired
 * for real (loadClient).
 */
export function loadSites(count) {
  const createdAt = new Date().toISOString();
  const sites = Array.from({ length: count }, (_, i) => ({ origin: `https://load${i}.example`, token: nonce(32) }));
  const grants = sites.map(({ origin, token }) => ({ origin, app: 'Load', tokenHash: sha256hex(token), createdAt }));
  return { sites, file: { grants } };
}

/**
 * An engine whose default AI is the scripted ACP agent, with `sites` sites already connected.
 *   timings: merged over {retentionMs: 1000} (ended sessions are dropped soon, so memory can come back)
 */
export async function startLoadEngine({ sites = 0, timings = {}, engineEnv, stderrToFile } = {}) {
  const { sites: list, file } = loadSites(sites);
  const eng = await startFakeEngine({
    timings: { retentionMs: 1000, ...timings },
    engineEnv,
    stderrToFile,
    files: { 'grants.json': file },
  });
  eng.sites = list;
  return eng;
}

/** A socket to the engine; resolves once connected. `closed` is set (and `ended` resolves) when it closes. */
function connectIdle(eng) {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port: eng.port });
    const c = { sock, closed: false, answered: false };
    c.ended = new Promise((r) => sock.on('close', () => {
      c.closed = true;
      r();
    }));
    sock.on('error', (e) => (c.connected ? undefined : reject(e)));
    sock.on('data', (d) => {
      if (/^HTTP\/1\.1 200 /.test(d.toString('latin1'))) c.answered = true;
    });
    sock.on('connect', () => {
      c.connected = true;
      resolve(c);
    });
  });
}

/**
 * Hold `n` idle connections: every other one is a kept-alive client that was served one GET /health and
 * now waits (the idle deadline), the others connected and never sent a byte (the header deadline).
 * Returns {conns, open(), close()}: open() counts those still open.
 */
export async function holdIdle(eng, n, { concurrency = 50 } = {}) {
  const conns = await pool(Array.from({ length: n }, (_, i) => i), concurrency, async (i) => {
    const c = await connectIdle(eng);
    if (i % 2 === 0) {
      c.sock.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n\r\n`);
      const t0 = Date.now();
      while (!c.answered && !c.closed && Date.now() - t0 < 10000) await sleep(5);
      if (!c.answered) throw new Error(`idle connection ${i}: no answer to its first request`);
    }
    return c;
  });
  return {
    conns,
    open: () => conns.filter((c) => !c.closed).length,
    close: () => conns.forEach((c) => c.sock.destroy()),
  };
}

/**
 * Prepare `streams` sessions (not approved: no agent runs) spread over the engine's sites, SESSIONS_PER_ORIGIN
 * each, open each one's event stream, and a WebMCP tool channel on the first `channels` of them.
 * Returns {sessions: [{api, id, stream, page?}], openStreams(), openChannels(), close()}: close() closes
 * the channels and the sessions (which ends their streams) and waits for the streams to end.
 */
export async function holdSessions(eng, { streams, channels, concurrency = 20 }) {
  const need = Math.ceil(streams / SESSIONS_PER_ORIGIN);
  if (eng.sites.length < need) throw new Error(`${streams} streams need ${need} sites; the engine has ${eng.sites.length}`);
  const sessions = await pool(Array.from({ length: streams }, (_, i) => i), concurrency, async (i) => {
    const site = eng.sites[Math.floor(i / SESSIONS_PER_ORIGIN)];
    const api = sessionApi(eng, site);
    const prep = await api.prepare({});
    if (prep.status !== 201) throw new Error(`prepare ${i}: ${prep.status} ${prep.body}`);
    const id = prep.json.sessionId;
    const stream = api.stream(id, { timeoutMs: FOREVER });
    const res = await stream.response;
    if (res.status !== 200) throw new Error(`stream ${i}: ${res.status}`);
    let page;
    if (i < channels) page = await PageChannel.connect(eng, prep.json.registrationToken, { origin: site.origin });
    return { api, id, stream, page };
  });
  const withPage = sessions.filter((s) => s.page);
  return {
    sessions,
    openStreams: () => sessions.filter((s) => !s.stream.isEnded()).length,
    openChannels: () => withPage.filter((s) => s.page.sock.ws.readyState === 1).length,
    async close() {
      for (const s of withPage) s.page.close();
      await pool(sessions, concurrency, async (s) => {
        const r = await s.api.close(s.id);
        if (r.status !== 200) throw new Error(`close ${s.id}: ${r.status} ${r.body}`);
        await s.stream.waitForEnd(10000);
      });
    },
  };
}

/** A GET /health from a local process on a new connection: a function resolving its latency in ms, or throwing. */
export function timedHealth(eng, { timeoutMs = 10000 } = {}) {
  return async () => {
    const t0 = performance.now();
    const r = await local(eng, '/health', { timeoutMs });
    if (r.status !== 200) throw new Error(`GET /health: ${r.status} ${r.body}`);
    return performance.now() - t0;
  };
}

/**
 * The client that must keep being served: its own site paired through the approval page, and a warm
 * session with the scripted agent (approved without a prompt, so the agent is up and idle).
 * Returns {api, id, stream, health(), turn()}: each resolves its latency in ms, or throws.
 */
export async function loadClient(eng, { timeoutMs = 10000 } = {}) {
  const origin = 'https://client.example';
  const { token } = await pairCli(eng, origin);
  const api = sessionApi(eng, { origin, token });
  const prep = await api.prepare({});
  if (prep.status !== 201) throw new Error(`prepare: ${prep.status} ${prep.body}`);
  const id = prep.json.sessionId;
  const stream = api.stream(id, { timeoutMs: FOREVER });
  await stream.response;
  const a = await api.approve(id);
  if (a.status !== 200) throw new Error(`approve: ${a.status} ${a.body}`);
  await stream.waitFor('ready', 30000);
  let n = 0;
  return {
    api, id, stream,
    health: timedHealth(eng, { timeoutMs }),
    async turn() {
      const from = stream.events.length;
      const text = `turn ${++n}`;
      const t0 = performance.now();
      const r = await api.prompt(id, { prompt: text });
      if (r.status !== 200) throw new Error(`prompt: ${r.status} ${r.body}`);
      const done = await stream.waitFor((e) => e.event === 'turn_completed' || e.event === 'failed', timeoutMs, { from });
      if (done.event !== 'turn_completed' || !done.data.text.includes(text)) throw new Error(`turn: ${JSON.stringify(done)}`);
      return performance.now() - t0;
    },
  };
}

/**
 * Serve the client for `durationMs`, or until the promise `until` settles: a GET /health every
 * `healthEveryMs`, and a session turn after each `turnEvery` of them (a client without turn() has none).
 * Errors are recorded, not thrown. Resolves {health: [ms], turns: [ms], errors: [text]}.
 */
export async function serveClient(client, { durationMs = Infinity, until, healthEveryMs = 50, turnEvery = 10 }) {
  const out = { health: [], turns: [], errors: [] };
  const end = Date.now() + durationMs;
  let settled = false;
  until?.finally(() => (settled = true)).catch(() => {});
  if (!client.turn) turnEvery = Infinity;
  for (let i = 1; Date.now() < end && !settled; i++) {
    try {
      out.health.push(await client.health());
      if (i % turnEvery === 0) out.turns.push(await client.turn());
    } catch (e) {
      out.errors.push(e.message.slice(0, 300));
    }
    await sleep(healthEveryMs);
  }
  return out;
}

/** The engine's {rssKb, fds} now. */
export function engineUsage(eng) {
  return { rssKb: rssKb(eng.proc.pid), fds: fdCount(eng.proc.pid) };
}

/**
 * Sample engineUsage every `everyMs` until stop(); stop() resolves the highest {rssKb, fds} seen, with
 * `samples`: [{ms, rssKb, fds}] (ms since the start).
 */
export function sampleUsage(eng, everyMs = 250) {
  const t0 = Date.now();
  const samples = [];
  const peak = { rssKb: 0, fds: 0 };
  const take = () => {
    const u = engineUsage(eng);
    samples.push({ ms: Date.now() - t0, ...u });
    peak.rssKb = Math.max(peak.rssKb, u.rssKb ?? 0);
    peak.fds = Math.max(peak.fds, u.fds ?? 0);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return { ...peak, samples };
    },
  };
}

/** Poll until the engine's descriptors are at most `fds`, up to timeoutMs; resolves the last usage seen. */
export async function settleUsage(eng, fds, { timeoutMs = 20000 } = {}) {
  const end = Date.now() + timeoutMs;
  let u = engineUsage(eng);
  while (u.fds > fds && Date.now() < end) {
    await sleep(200);
    u = engineUsage(eng);
  }
  await sleep(500);  // freed after the last close: let the io thread finish its work
  return engineUsage(eng);
}

/** Fire `n` GET /health on fresh connections, `concurrency` at a time (a warm-up that grows the engine's pools). */
export async function burst(eng, n, concurrency = 20) {
  await pool(Array.from({ length: n }), concurrency, () => request(eng, { path: '/health' }));
}

/**
 * The whole run, shared by the test and the bench: serve the client alone for `idleProbeMs` (the idle
 * figures), hold `streams` event streams (`channels` of them with a tool channel) and `idle` idle
 * connections while serving the client for `holdMs`, close everything, and measure again.
 * `log(text)` reports progress. Resolves every figure (see the fields below); `raw` has each latency
 * and the engine's usage sampled every `sampleEveryMs` during the hold.
 */
export async function runLoad(eng, { idle, streams, channels, holdMs, idleProbeMs = 5000, sampleEveryMs = 250, log = () => {} }) {
  const client = await loadClient(eng);
  await burst(eng, 200);
  for (let i = 0; i < 3; i++) await client.turn();
  const quiet = await serveClient(client, { durationMs: idleProbeMs });
  const before = engineUsage(eng);
  log(`before: ${JSON.stringify(before)}`);

  const t0 = Date.now();
  const held = await holdSessions(eng, { streams, channels });
  const idles = await holdIdle(eng, idle);
  const setupMs = Date.now() - t0;
  const opened = { streams: held.openStreams(), channels: held.openChannels(), idle: idles.open() };
  log(`held after ${setupMs} ms: ${JSON.stringify(opened)}`);

  const sampler = sampleUsage(eng, sampleEveryMs);
  const loaded = await serveClient(client, { durationMs: holdMs });
  const { samples, ...during } = sampler.stop();
  const stillOpen = { streams: held.openStreams(), channels: held.openChannels(), idle: idles.open() };
  log(`during: ${JSON.stringify(during)}; still open: ${JSON.stringify(stillOpen)}`);

  const t1 = Date.now();
  idles.close();
  await held.close();
  const after = await settleUsage(eng, before.fds);
  const closeMs = Date.now() - t1;
  const afterward = await serveClient(client, { durationMs: Math.min(idleProbeMs, 3000) });
  log(`after ${closeMs} ms: ${JSON.stringify(after)}`);
  return {
    numbers: { idle, streams, channels, holdMs },
    setupMs, closeMs, opened, stillOpen,
    usage: { before, during, after },
    latency: {
      idle: { health: percentiles(quiet.health), turn: percentiles(quiet.turns) },
      load: { health: percentiles(loaded.health), turn: percentiles(loaded.turns) },
      after: { health: percentiles(afterward.health), turn: percentiles(afterward.turns) },
    },
    errors: [...quiet.errors, ...loaded.errors, ...afterward.errors],
    raw: { idle: quiet, load: loaded, after: afterward, usage: samples },
  };
}
