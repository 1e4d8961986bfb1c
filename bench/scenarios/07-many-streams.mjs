// Scenario 7: 1,000 concurrent SSE streams (200 with --quick) at 10 events/s each. The upstream
// (bench/fakes/openai-upstream.mjs, helper CPU) answers every chat request with an endless stream, one
// timestamped chunk every 100 ms, and the driver holds all the streams open:
//   direct   each stream read straight from the upstream (what the relays add to)
//   engine   one page session per stream (250 connected sites, 4 sessions each), its turn streaming
//   nginx    nginx relaying each stream's bytes (proxy_buffering off)
//   node     the Node relay's /llm, translating each stream into the page's events
// Once every stream has delivered a token, a window of W s (10; 4 with --quick) is measured: the
// relay's CPU (scheduler time of its processes from schedstat, finer than 10 ms ticks; the engine's
// own pid; utime+stime ticks kept in the JSON) as a share of one CPU and per event delivered, every event's latency (receive − write) in the window, and errors: streams that
// failed to open or ended before the window did. "added p99" = p99 − direct p99 of the same round.
// The driver reads on CPU 1 (a throughput client, beside the upstream): 10,000 events/s cross CPUs
// for every contender alike.

import { sleep } from '../../tests/e2e/lib/engine.mjs';
import { pool } from '../../tests/e2e/lib/load.mjs';
import { startNginxRelay, startNodeRelay } from '../lib/contenders.mjs';
import { usageWindow } from '../lib/procfs.mjs';
import { distribution, summary } from '../lib/stats.mjs';
import { chatBody, openSession, readTokens, script, startLlmEngine, startOpenAiUpstream, until } from '../lib/tokens.mjs';

const EVERY_MS = 100;

const start = {
  direct: async (up) => ({ name: 'direct', port: up.port, pids: () => [], stop: async () => {} }),
  engine: (up, n) => startLlmEngine(up, { sites: Math.ceil(n / 4) }).then((e) => Object.assign(e, { pids: () => [e.pid] })),
  nginx: (up) => startNginxRelay(up.port),
  node: (up) => startNodeRelay(up.port),
};

/** Open stream i through `srv`; resolves its reader once it streams (or throws). */
async function openOne(contender, srv, i, prompt) {
  if (contender === 'engine') {
    const sess = await openSession(srv, srv.sites[Math.floor(i / 4)], { prompt });
    const a = await sess.post('approve');
    if (a.status !== 200) {
      sess.reader.close();
      throw new Error(`approve: ${a.status} ${a.body}`);
    }
    return sess.reader;
  }
  const reader = contender === 'node'
    ? readTokens(srv.port, { path: `/llm?prompt=${encodeURIComponent(prompt)}`, end: 'event: turn_completed' })
    : readTokens(srv.port, { method: 'POST', path: '/v1/chat/completions', end: 'data: [DONE]', headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' }, body: chatBody(prompt) });
  const status = await reader.opened;
  if (status !== 200) throw new Error(`stream ${i}: status ${status}`);
  return reader;
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
  notes: 'Upstream and reader (driver) on CPU 1, relay on CPU 0. Endless streams, one chunk per 100 ms each; ' +
    'window after every stream delivered; CPU from schedstat (engine: its pid), latency = receive − write.',

  async setup(ctx) {
    return { upstream: await startOpenAiUpstream(), n: ctx.quick ? 200 : 1000, windowS: ctx.quick ? 4 : 10, direct: null };
  },
  async teardown(ctx) {
    await ctx.state.upstream.stop();
  },

  async round(contender, ctx) {
    const { upstream, n, windowS } = ctx.state;
    const srv = await start[contender](upstream, n);
    const readers = [];
    const openErrors = [];
    try {
      const prompt = script({ count: 0, every: EVERY_MS, tag: `s7-${contender}-${ctx.round}` });
      // 8 at a time: the engine serves 1,024 connections at once by default (ServerLimits), and
      // 1,000 held streams plus a prepare and an approve per stream being opened must stay under it.
      await pool(Array.from({ length: n }, (_, i) => i), 8, async (i) => {
        try {
          readers.push(await openOne(contender, srv, i, prompt));
        } catch (e) {
          openErrors.push(String(e.message || e));
        }
      });
      await until(() => readers.every((r) => r.out.tokens > 0 || r.out.ended), { timeoutMs: 10000, ms: 50 });
      await sleep(500);
      const mark = readers.map((r) => r.out.lat.length);
      const w = usageWindow(srv.pids());
      await sleep(windowS * 1000);
      const u = w.stop();
      const lat = readers.flatMap((r, k) => r.out.lat.slice(mark[k]));
      const ended = readers.filter((r) => r.out.ended).length;
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
      for (const r of readers) r.close();
      await srv.stop();
      await sleep(300);  // let the upstream drop the streams' timers
    }
  },
};
