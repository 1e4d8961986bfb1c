// Scenario 1: GET /health from a local process (no Origin), over 1 kept-alive connection (latency: wrk
// on the server's CPU) and 64 (throughput: wrk on the other CPU). Every contender answers the very
// bytes of the engine's body, so they differ only in how they serve it.
// Figures per run of wrk: req/s, p50/p99 latency, the server's CPU µs per request (from /proc), and
// the bytes of one response (headers included: a fairness check, not a target).

import { local } from '../../tests/e2e/lib/http.mjs';
import { startEngine, startFloorHttp, startNginxHealth, startNodeHealth } from '../lib/contenders.mjs';
import { usageWindow } from '../lib/procfs.mjs';
import { runWrk } from '../lib/wrk.mjs';

const start = {
  engine: () => startEngine(),
  nginx: (body) => startNginxHealth(body),
  node: (body) => startNodeHealth(body),
  floor: (body) => startFloorHttp(body),
};

const figures = {};
for (const c of ['c1', 'c64']) {
  const n = c.slice(1);
  Object.assign(figures, {
    [`${c}.rps`]: { label: `${n} conn: requests/s`, unit: 'req/s', better: 'higher' },
    [`${c}.p50_us`]: { label: `${n} conn: p50 latency`, unit: 'µs', better: 'lower' },
    [`${c}.p99_us`]: { label: `${n} conn: p99 latency`, unit: 'µs', better: 'lower' },
    [`${c}.cpu_us`]: { label: `${n} conn: server CPU per request`, unit: 'µs', better: 'lower' },
    [`${c}.errors`]: { label: `${n} conn: errors`, unit: '', better: 'lower' },
  });
}
figures.resp_bytes = { label: 'bytes per response', unit: 'B', better: 'lower' };

/** One wrk run against `srv`, with the server's CPU read over exactly that run. */
async function measure(srv, connections, durationS, cpu) {
  const w = usageWindow(srv.pids());
  const r = await runWrk({ url: `http://127.0.0.1:${srv.port}/health`, connections, durationS, cpu });
  const u = w.stop();
  return {
    figures: { rps: r.rps, p50_us: r.latency.p50_us, p99_us: r.latency.p99_us, cpu_us: u.cpuUs / r.requests, errors: r.errors },
    dist: r.latency.dist,
    extra: { requests: r.requests, durationS: r.durationS, errorsBy: r.errorsBy, cpu: u, cpuNsPerRequestUs: u.cpuNsUs / r.requests, latency: r.latency, bytes: r.bytes },
    bytesPerResponse: r.requests ? r.bytes / r.requests : null,
  };
}

export default {
  id: '1',
  title: 'GET /health from a local process, 1 and 64 connections (wrk)',
  contenders: ['engine', 'nginx', 'node', 'floor'],
  baseline: 'nginx',
  figures,
  targets: [
    { figure: 'c1.cpu_us', contender: 'engine', vs: 'nginx', max: 1.2, text: 'CPU per request ≤ 1.2× nginx (1 connection)' },
    { figure: 'c64.cpu_us', contender: 'engine', vs: 'nginx', max: 1.2, text: 'CPU per request ≤ 1.2× nginx (64 connections)' },
    { figure: 'c1.p50_us', contender: 'engine', vs: 'nginx', max: 1.15, text: '1-connection p50 ≤ 1.15× nginx' },
    { figure: 'c1.p99_us', contender: 'engine', vs: 'nginx', max: 1.5, text: '1-connection p99 ≤ 1.5× nginx' },
    { figure: 'c64.rps', contender: 'engine', vs: 'nginx', min: 0.9, text: '64 connections ≥ 0.9× nginx req/s' },
  ],
  notes: 'wrk -t1 with bench/lib/wrk-report.lua; 1 connection: wrk on CPU 0 with the server; 64: wrk on CPU 1. ' +
    'A 1 s warm-up at 64 connections precedes each measurement. The server is started afresh for every round.',

  async setup(ctx) {
    // The engine's own answer to a local caller is the body every contender sends.
    const eng = await startEngine();
    try {
      const r = await local(eng, '/health');
      if (r.status !== 200) throw new Error(`engine GET /health: ${r.status} ${r.body}`);
      ctx.log(`body (${r.body.length} B): ${r.body}`);
      return { body: r.body, durationS: ctx.quick ? 2 : 5 };
    } finally {
      await eng.stop();
    }
  },

  async round(contender, ctx) {
    const { body, durationS } = ctx.state;
    const srv = await start[contender](body);
    try {
      await runWrk({ url: `http://127.0.0.1:${srv.port}/health`, connections: 64, durationS: 1, cpu: ctx.cpu.throughputClient });
      const c1 = await measure(srv, 1, durationS, ctx.cpu.latencyClient);
      const c64 = await measure(srv, 64, durationS, ctx.cpu.throughputClient);
      const out = { figures: { resp_bytes: c1.bytesPerResponse }, dists: { c1: c1.dist, c64: c64.dist }, extra: { c1: c1.extra, c64: c64.extra } };
      for (const [k, v] of Object.entries(c1.figures)) out.figures[`c1.${k}`] = v;
      for (const [k, v] of Object.entries(c64.figures)) out.figures[`c64.${k}`] = v;
      return out;
    } finally {
      await srv.stop();
    }
  },
};
