// Scenario 8: memory. Resident memory (VmRSS, all the contender's processes) at three moments:
//   base      started, served a few requests, idle
//   sessions  (engine only) N sessions prepared by connected pages, no stream, no AI started
//   streams   N open event streams: the engine's session streams (on those sessions); nginx and the
//             Node relay each relaying N idle SSE streams from bench/fakes/sse-upstream.mjs
// Per-session and per-stream figures are slopes, in bytes: RSS is read after the first half of the N
// and after all N, and the growth of the second half is divided by N/2. What a server pays once for
// the first ones (its buffers' high-water mark for that many concurrent requests, first-time
// allocations) then lands in the first half and is not counted per session. RSS moves in 4 KB pages
// and malloc grows its heap in steps, so N is large (400; 100 with --quick) to spread that out.
// The relays hold two sockets per stream (client and upstream) where the engine holds one: that is
// the cost of their architecture, and the comparison the issue asks for ("per stream ≤ nginx's").
//
// Pages are connected the way tests/e2e/lib/load.mjs connects many: their grants written into
// grants.json before the engine starts (4 live sessions per site, the spec's limit).

import { sleep } from '../../tests/e2e/lib/engine.mjs';
import { burst, SESSIONS_PER_ORIGIN, pool } from '../../tests/e2e/lib/load.mjs';
import { sessionApi } from '../../tests/e2e/lib/sessions.mjs';
import { startLoadEngine, startNginxRelay, startNodeRelay, startSseUpstream } from '../lib/contenders.mjs';
import { getStatus, holdStreams } from '../lib/http1.mjs';
import { rssKb } from '../lib/procfs.mjs';

const SETTLE_MS = 500;  // after the last open: let the server finish what it does with it

async function settledRss(srv) {
  await sleep(SETTLE_MS);
  return rssKb(srv.pids());
}

async function engineRound(ctx) {
  const n = ctx.state.n;
  const eng = await startLoadEngine({ sites: Math.ceil(n / SESSIONS_PER_ORIGIN) });
  let held;
  try {
    await burst(eng, 20, 4);
    const base = await settledRss(eng);
    const prepare = (from, to) => pool(Array.from({ length: to - from }, (_, k) => from + k), 16, async (i) => {
      const site = eng.sites[Math.floor(i / SESSIONS_PER_ORIGIN)];
      const r = await sessionApi(eng, site).prepare({});
      if (r.status !== 201) throw new Error(`prepare ${i}: ${r.status} ${r.body}`);
      return { id: r.json.sessionId, site };
    });
    const half = n / 2;
    const sessions = await prepare(0, half);
    const halfSessions = await settledRss(eng);
    sessions.push(...(await prepare(half, n)));
    const withSessions = await settledRss(eng);
    const streamOf = ({ id, site }) => ({
      path: `/session/${encodeURIComponent(id)}/stream`,
      headers: { Origin: site.origin, Authorization: `Bearer ${site.token}` },
    });
    held = [await holdStreams(eng.port, sessions.slice(0, half).map(streamOf))];
    const halfStreams = await settledRss(eng);
    held.push(await holdStreams(eng.port, sessions.slice(half).map(streamOf)));
    const withStreams = await settledRss(eng);
    const open = held[0].open() + held[1].open();
    if (open !== n) throw new Error(`only ${open} of ${n} streams stayed open`);
    return {
      figures: {
        base_rss_kb: base,
        per_session_b: ((withSessions - halfSessions) * 1024) / half,
        per_stream_b: ((withStreams - halfStreams) * 1024) / half,
        per_session_avg_b: ((withSessions - base) * 1024) / n,
        per_stream_avg_b: ((withStreams - withSessions) * 1024) / n,
      },
      extra: { n, rssKb: { base, halfSessions, withSessions, halfStreams, withStreams } },
    };
  } finally {
    for (const h of held || []) h.close();
    await eng.stop();
  }
}

async function relayRound(start, ctx) {
  const n = ctx.state.n;
  const up = ctx.state.upstream.port;
  const srv = await start(up);
  let held;
  try {
    // A few complete relayed answers first (one event, then the end), as the engine served a few.
    for (let i = 0; i < 20; i++) {
      const s = await getStatus(srv.port, '/warm?every=1&count=1');
      if (s !== 200) throw new Error(`warm-up through ${srv.name}: ${s}`);
    }
    const base = await settledRss(srv);
    const half = n / 2;
    const list = (from, to) => Array.from({ length: to - from }, (_, k) => ({ path: `/stream/${from + k}` }));
    held = [await holdStreams(srv.port, list(0, half))];
    const halfStreams = await settledRss(srv);
    held.push(await holdStreams(srv.port, list(half, n)));
    const withStreams = await settledRss(srv);
    const open = held[0].open() + held[1].open();
    if (open !== n) throw new Error(`only ${open} of ${n} streams stayed open`);
    return {
      figures: {
        base_rss_kb: base,
        per_stream_b: ((withStreams - halfStreams) * 1024) / half,
        per_stream_avg_b: ((withStreams - base) * 1024) / n,
      },
      extra: { n, rssKb: { base, halfStreams, withStreams } },
    };
  } finally {
    for (const h of held || []) h.close();
    await srv.stop();
  }
}

export default {
  id: '8',
  title: 'Memory: baseline RSS, per idle session, per open stream',
  contenders: ['engine', 'nginx', 'node'],
  baseline: 'nginx',
  figures: {
    base_rss_kb: { label: 'RSS, idle', unit: 'KB', better: 'lower' },
    per_session_b: { label: 'per prepared session (no upstream)', unit: 'B', better: 'lower' },
    per_stream_b: { label: 'per open stream', unit: 'B', better: 'lower' },
    per_session_avg_b: { label: 'per session, average over all N', unit: 'B', better: 'lower' },
    per_stream_avg_b: { label: 'per stream, average over all N', unit: 'B', better: 'lower' },
  },
  targets: [
    { figure: 'base_rss_kb', contender: 'engine', max: 9 * 1024, text: 'baseline RSS ≤ 9 MB' },
    { figure: 'per_session_b', contender: 'engine', max: 4096, text: '≤ 4 KB per idle session without an upstream' },
    { figure: 'per_stream_b', contender: 'engine', vs: 'nginx', max: 1, text: 'per stream ≤ nginx’s' },
  ],
  notes: 'RSS summed over the process tree (nginx: master + worker). Relays hold client + upstream socket per stream.',

  async setup(ctx) {
    const upstream = await startSseUpstream();
    return { upstream, n: ctx.quick ? 100 : 400 };
  },
  async teardown(ctx) {
    await ctx.state.upstream.stop();
  },
  async round(contender, ctx) {
    if (contender === 'engine') return engineRound(ctx);
    return relayRound(contender === 'nginx' ? startNginxRelay : startNodeRelay, ctx);
  },
};
