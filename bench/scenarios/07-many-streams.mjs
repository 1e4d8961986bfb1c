// Scenario 7: 1,000 concurrent SSE streams (200 with --quick) at 10 events/s each. The model server
// (bench/fakes/paced-upstream.c, helper CPU) answers every chat request with an endless stream, one
// timestamped chunk every 100 ms at a phase set by the stream's place in the round (so each contender is
// offered the same schedule, however its streams opened), and a lean C reader
// (bench/clients/sse-reader.c, helper CPU) holds all the streams open:
//   direct   each stream read straight from the model server (what the relays add to)
//   engine   one page session per stream (250 connected sites, 4 sessions each), its turn streaming
//   nginx    nginx relaying each stream's bytes (proxy_buffering off)
//   node     the Node relay's /llm, translating each stream into the page's events
// Once every stream has delivered a token, a window of W s (10; 4 with --quick) is measured: the
// relay's CPU (scheduler time of its processes from schedstat, finer than 10 ms ticks; the engine's
// own pid; utime+stime ticks kept in the JSON) as a share of one CPU and per event delivered, every event's latency (receive − write) in the window, and errors: streams that
// failed to open or ended before the window did. "added p99" = p99 − direct p99 of the same round.
// The reader is on CPU 1 (a throughput client, beside the model server): 10,000 events/s cross CPUs
// for every contender alike. Both ends are C, not Node, for the tail: Node's garbage collector paused the
// model server (between a chunk's timestamp and its write) and the reader (before its read) a few ms at
// a time, a few dozen times a round, and those pauses, not the relays, decided each round's p99
// (docs/PERFORMANCE.md, "Scenario 7's tail").

import path from 'node:path';
import { sleep } from '../../tests/e2e/lib/engine.mjs';
import { pool } from '../../tests/e2e/lib/load.mjs';
import { sessionApi } from '../../tests/e2e/lib/sessions.mjs';
import { CLIENTS, FAKES } from '../lib/env.mjs';
import { startNginxRelay, startNodeRelay } from '../lib/contenders.mjs';
import { CPU, spawnLineClient, spawnPinned } from '../lib/proc.mjs';
import { usageWindow } from '../lib/procfs.mjs';
import { distribution, summary } from '../lib/stats.mjs';
import { chatBody, script, startLlmEngine, until } from '../lib/tokens.mjs';

const EVERY_MS = 100;

const start = {
  direct: async (up) => ({ name: 'direct', port: up.port, pids: () => [], stop: async () => {} }),
  engine: (up, n) => startLlmEngine(up, { sites: Math.ceil(n / 4) }).then((e) => Object.assign(e, { pids: () => [e.pid] })),
  nginx: (up) => startNginxRelay(up.port),
  node: (up) => startNodeRelay(up.port),
};

/** Opens stream i through `srv` on the reader; resolves once it is open (its turn approved, for the engine). */
export async function openOne(contender, srv, reader, i, prompt) {
  const opened = async (line) => {
    const out = await reader.ask(line);
    if (out !== 'open 200') throw new Error(`stream ${i}: ${out}`);
  };
  if (contender === 'engine') {
    const site = srv.sites[Math.floor(i / 4)];
    const api = sessionApi(srv, site);
    const r = await api.prepare({ prompt });
    if (r.status !== 201) throw new Error(`prepare: ${r.status} ${r.body}`);
    await opened(`open ${srv.port} ${encodeURIComponent(r.json.sessionId)} ${site.origin} ${site.token}`);
    const a = await api.approve(r.json.sessionId);
    if (a.status !== 200) throw new Error(`approve: ${a.status} ${a.body}`);
    return;
  }
  await opened(contender === 'node' ? `get ${srv.port} /llm?prompt=${encodeURIComponent(prompt)}` : `chat ${srv.port}`);
}

/** The paced model server, on the helper CPU (not measured). */
export async function startPacedUpstream() {
  const h = await spawnPinned(path.join(FAKES, 'paced-upstream'), ['0'], { cpu: CPU.helper });
  return Object.assign(h, { name: 'upstream', url: `http://127.0.0.1:${h.port}/v1` });
}

export default {
  id: '7',
  title: '1,000 concurrent SSE streams at 10 events/s',
  contenders: ['direct', 'engine', 'nginx', 'node'],
  baseline: 'nginx',
  figures: {
    cpu_pct: { label: 'relay CPU (% of one CPU)', unit: '%', better: 'lower' },
    cpu_us: { label: 'relay CPU per event', unit: 'µs', better: 'lower' },
    p50_us: { label: 'event latency p50', unit: 'µs', better: 'lower' },
    p99_us: { label: 'event latency p99', unit: 'µs', better: 'lower' },
    added_p99_us: { label: 'added p99 (minus direct)', unit: 'µs', better: 'lower' },
    events_per_s: { label: 'events delivered per second', unit: '/s', better: 'higher' },
    errors: { label: 'errors (failed or ended streams)', unit: '', better: 'lower' },
  },
  targets: [
    { figure: 'cpu_us', contender: 'engine', vs: 'nginx', max: 1.2, text: 'CPU ≤ 1.2× nginx' },
    // "Added p99 ≤ nginx's": both relays are read against the same direct p99 in each round, so the
    // question is whether the engine's p99 is at most nginx's. Asked as a ratio of the two added p99s,
    // it divided by nginx's, a few µs that swing by hundreds (see docs/PERFORMANCE.md, "Targets changed").
    { figure: 'p99_us', contender: 'engine', vs: 'nginx', max: 1, text: 'added p99 ≤ nginx’s (engine p99 ≤ nginx p99, same upstream, same rounds)' },
    { figure: 'errors', contender: 'engine', max: 0, text: 'no errors' },
  ],
  distUnit: { events: 'µs' },
  notes: 'Model server and reader on CPU 1 (both C: bench/fakes/paced-upstream.c, bench/clients/sse-reader.c), relay on CPU 0. Endless streams, one chunk per 100 ms each; ' +
    'window after every stream delivered; CPU from schedstat (engine: its pid), latency = receive − write.',

  async setup(ctx) {
    return { upstream: await startPacedUpstream(), n: ctx.quick ? 200 : 1000, windowS: ctx.quick ? 4 : 10, direct: null };
  },
  async teardown(ctx) {
    await ctx.state.upstream.stop();
  },

  async round(contender, ctx) {
    const { upstream, n, windowS } = ctx.state;
    const srv = await start[contender](upstream, n);
    // Every contender's streams carry the same script (the C model server reads only count and every).
    const prompt = script({ count: 0, every: EVERY_MS });
    const reader = spawnLineClient(path.join(CLIENTS, 'sse-reader'), [chatBody(prompt)], { cpu: CPU.helper });
    const openErrors = [];
    try {
      // 8 at a time: the engine serves 1,024 connections at once by default (ServerLimits), and
      // 1,000 held streams plus a prepare and an approve per stream being opened must stay under it.
      await pool(Array.from({ length: n }, (_, i) => i), 8, async (i) => {
        try {
          await openOne(contender, srv, reader, i, prompt);
        } catch (e) {
          openErrors.push(String(e.message || e));
        }
      });
      const counts = async () => (await reader.ask('count')).split(' ').map(Number);  // [streams, with a token, ended]
      await until(async () => {
        const [all, withToken, ended] = await counts();
        return withToken + ended >= all;
      }, { timeoutMs: 10000, ms: 50 });
      await sleep(500);
      if ((await reader.ask('mark')) !== 'marked') throw new Error('the reader did not mark');
      const w = usageWindow(srv.pids());
      await sleep(windowS * 1000);
      const u = w.stop();
      const taken = (await reader.ask('take')).split(' ');
      const lat = taken.slice(1).map(Number);
      if (lat.length !== Number(taken[0])) throw new Error(`the reader's take: ${taken[0]} latencies announced, ${lat.length} read`);
      const ended = (await counts())[2];
      const s = summary(lat);
      if (contender === 'direct') ctx.state.direct = s.p99;
      if (!lat.length) throw new Error(`no event in the window (${openErrors.length} streams failed to open: ${openErrors[0]})`);
      return {
        figures: {
          cpu_pct: contender === 'direct' ? null : (u.cpuNsUs / 1e6 / (u.wallMs / 1000)) * 100,
          cpu_us: contender === 'direct' ? null : u.cpuNsUs / lat.length,
          p50_us: s.p50,
          p99_us: s.p99,
          added_p99_us: ctx.state.direct == null ? null : s.p99 - ctx.state.direct,
          events_per_s: lat.length / (u.wallMs / 1000),
          errors: openErrors.length + ended,
        },
        dists: { events: distribution(lat) },
        extra: { n, windowS, cpu: u, ticksPerEventUs: u.cpuUs / lat.length, latency: s, openErrors: openErrors.slice(0, 5), openErrorCount: openErrors.length, ended },
      };
    } finally {
      await reader.ask('close').catch(() => {});
      await reader.stop();
      await srv.stop();
      await sleep(300);  // let the model server drop the streams
    }
  },
};
