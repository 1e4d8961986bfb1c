// Scenario 2: token relay. The scripted OpenAI-compatible upstream (bench/fakes/openai-upstream.mjs,
// helper CPU) streams N chat completion chunks (10,000; 2,000 with --quick), each carrying the moment
// it was written, to one reader:
//   direct   the client reads the upstream itself (what every relay adds to)
//   engine   through the engine's tool loop (llm:bench provider) to a page's session event stream
//   nginx    nginx relaying the upstream's bytes (proxy_buffering off)
//   node     the Node relay (bench/baselines/node-relay.mjs /llm): parses the upstream's SSE and
//            re-emits the page's events, as the engine does
//   floor    build-bench/floors/sse-relay, the C byte relay
// Twice per round: paced (one chunk per ms; the client on the server's CPU, as a latency client) and
// burst (as fast as the upstream's writes drain; the client on the other CPU, as a throughput client).
// Latency per token = client receive time − upstream write time (both CLOCK_MONOTONIC); "added" is
// a contender's p50 minus the direct p50 of the same round. CPU per token = the relay's scheduler
// time (schedstat: a paced run costs the engine a few tens of ms, too few 10 ms ticks) over the
// window from just before the request (the engine: the prompt, on a session already approved and
// ready) to the last token, divided by N; utime+stime ticks are kept in the JSON. "Beyond the C floor"
// = a relay's paced CPU per token minus the floor's of the same round (the floor runs before them).

import { startFloorRelay, startNginxRelay, startNodeRelay } from '../lib/contenders.mjs';
import { usageWindow } from '../lib/procfs.mjs';
import { distribution, summary } from '../lib/stats.mjs';
import { onCpu, prepareTurn, script, startLlmEngine, startOpenAiUpstream, within } from '../lib/tokens.mjs';

const start = {
  direct: async (up) => ({ name: 'direct', port: up.port, pids: () => [], stop: async () => {} }),
  engine: (up) => startLlmEngine(up).then((e) => Object.assign(e, { pids: () => [e.pid] })),
  nginx: (up) => startNginxRelay(up.port),
  node: (up) => startNodeRelay(up.port),
  floor: (up) => startFloorRelay(up.port),
};

async function turn(contender, srv, ctx, mode) {
  const { n } = ctx.state;
  const prompt = script({ count: n, every: mode === 'paced' ? 1 : 0, tag: `s2-${contender}-${mode}-${ctx.round}` });
  const t = await prepareTurn(contender, srv, prompt, { site: srv.sites?.[0] });
  try {
    const w = usageWindow(srv.pids());
    const reader = t.go();
    const out = await within(reader.done, n * 5 + 30000, `${contender} ${mode}: the answer`);
    const u = w.stop();
    if (t.session) await t.session.prompted;
    if (out.tokens !== n) throw new Error(`${contender} ${mode}: ${out.tokens} of ${n} tokens arrived`);
    return { out, u, s: summary(out.lat) };
  } finally {
    await t.close();
  }
}

export default {
  id: '2',
  title: 'Token relay: an OpenAI-compatible upstream streams chunks to a page (paced 1/ms and burst)',
  contenders: ['direct', 'floor', 'engine', 'nginx', 'node'],  // direct and floor first: the others are measured beyond them
  baseline: 'nginx',
  figures: {
    'paced.p50_us': { label: 'paced: token latency p50', unit: 'µs', better: 'lower' },
    'paced.added_p50_us': { label: 'paced: added p50 (minus direct)', unit: 'µs', better: 'lower' },
    'paced.p99_us': { label: 'paced: token latency p99', unit: 'µs', better: 'lower' },
    'paced.cpu_us': { label: 'paced: relay CPU per token', unit: 'µs', better: 'lower' },
    'paced.beyond_floor_us': { label: 'paced: relay CPU per token beyond the C floor', unit: 'µs', better: 'lower' },
    'burst.cpu_us': { label: 'burst: relay CPU per token', unit: 'µs', better: 'lower' },
    'burst.tokens_per_s': { label: 'burst: tokens per second', unit: '/s', better: 'higher' },
    'burst.p50_us': { label: 'burst: token latency p50', unit: 'µs', better: 'lower' },
  },
  targets: [
    { figure: 'paced.added_p50_us', contender: 'engine', vs: 'nginx', max: 1, text: 'added p50 per token ≤ nginx’s added p50' },
    { figure: 'paced.cpu_us', contender: 'engine', vs: 'nginx', max: 1.2, text: 'CPU per token paced ≤ 1.2× nginx' },
    { figure: 'burst.cpu_us', contender: 'engine', max: 2.5, text: 'CPU per token burst ≤ 2.5 µs' },
    // Changed from "≥ 4× less CPU than the Node relay (paced)" (docs/PERFORMANCE.md says why): paced,
    // every relay wakes once per token, and that wakeup is most of the C floor's cost and Node's.
    // As a fraction (engine's / Node's, ≤ ¼), not a ratio ≥ 4: an engine at the floor (or a little below
    // it, in a noisy round) has nothing beyond it, and a quotient by that would be meaningless.
    { figure: 'paced.beyond_floor_us', contender: 'engine', vs: 'node', max: 0.25, text: '≥ 4× less CPU than the Node relay (paced, beyond the C floor: engine’s ≤ ¼ of Node’s)' },
    { figure: 'burst.cpu_us', contender: 'node', vs: 'engine', min: 4, text: '≥ 4× less CPU than the Node relay (burst)' },
  ],
  distUnit: { paced: 'µs' },
  notes: 'Upstream bench/fakes/openai-upstream.mjs on CPU 1; relay on CPU 0; paced client on CPU 0, burst client on CPU 1. ' +
    'Token = `T<µs>;` in the content; latency = receive − write (CLOCK_MONOTONIC). CPU from schedstat of the relay (engine: its own pid), per token.',

  async setup(ctx) {
    const upstream = await startOpenAiUpstream();
    return { upstream, n: ctx.quick ? 2000 : 10000, directP50: null, floorPaced: null };
  },
  async teardown(ctx) {
    await ctx.state.upstream.stop();
  },

  async round(contender, ctx) {
    const up = ctx.state.upstream;
    const srv = await start[contender](up);
    try {
      // One short answer first: connections made, code paths warm.
      await turn(contender, srv, { ...ctx, state: { ...ctx.state, n: 50 } }, 'burst');
      const paced = await onCpu(ctx.cpu.latencyClient, () => turn(contender, srv, ctx, 'paced'));
      const burst = await turn(contender, srv, ctx, 'burst');
      if (contender === 'direct') ctx.state.directP50 = paced.s.p50;
      const n = ctx.state.n;
      const relay = contender !== 'direct';
      if (contender === 'floor') ctx.state.floorPaced = paced.u.cpuNsUs / n;
      const floor = ctx.state.floorPaced;
      return {
        figures: {
          'paced.p50_us': paced.s.p50,
          'paced.added_p50_us': ctx.state.directP50 == null ? null : paced.s.p50 - ctx.state.directP50,
          'paced.p99_us': paced.s.p99,
          'paced.cpu_us': relay ? paced.u.cpuNsUs / n : null,
          'paced.beyond_floor_us': relay && floor != null ? paced.u.cpuNsUs / n - floor : null,
          'burst.cpu_us': relay ? burst.u.cpuNsUs / n : null,
          'burst.tokens_per_s': n / ((burst.out.lastAt - burst.out.firstAt) / 1e6),
          'burst.p50_us': burst.s.p50,
        },
        dists: { paced: distribution(paced.out.lat) },
        extra: {
          n, directP50: ctx.state.directP50,
          paced: { latency: paced.s, cpu: paced.u, ticksPerTokenUs: paced.u.cpuUs / n, bytes: paced.out.bytes },
          burst: { latency: burst.s, cpu: burst.u, ticksPerTokenUs: burst.u.cpuUs / n, bytes: burst.out.bytes },
        },
      };
    } finally {
      await srv.stop();
    }
  },
};
