// Scenario 10: cold start: the time from spawn() to the first 200 answer to GET /health, many times.
// "Cold" as a visitor meets it: a fresh process, the binary and its libraries already in the page
// cache (each round starts its contender once unmeasured first, which also lets the engine write its
// LEURIA_HOME files), the home existing. The clock runs from just before spawn (through taskset: the
// same exec for everyone) until a 200 arrives; the bench polls with a new connection at once after
// every refused one. Also reported: the CPU the process (and its children) spent until then.
// Each start follows the previous one's exit at once, so how long a contender takes to stop counts: on
// this guest a start after some 200 ms of idle CPU runs 2-4 ms slower than one after 30 ms (the engine
// once waited 200 ms at every stop, and its starts read 1.0-1.2x nginx's for that; it still takes 5-30 ms
// to exit, nginx a few; docs/PERFORMANCE.md, findings, "the stop before the start", and "the whole run of
// 00:57"). Each start also gets a port of its own: polling a port reused within a minute had one SYN in
// most starts go unanswered until its retransmission, about 10 ms later (`nstat`'s TcpExtTCPSynRetrans),
// most likely meeting an earlier start's TIME_WAIT.

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { cleanEnv } from '../../tests/e2e/lib/engine.mjs';
import { BUILD, FLOORS } from '../lib/env.mjs';
import { untilOk } from '../lib/http1.mjs';
import { healthLocation, nginxConfig, NGINX } from '../lib/nginx.mjs';
import { freePort, spawnPinned } from '../lib/proc.mjs';
import { cpuNs, treePids } from '../lib/procfs.mjs';
import { distribution, summary } from '../lib/stats.mjs';

const BODY = '{"ok":true}';

// How each contender is spawned on a given port (no readiness line: the 200 is the signal).
const spawners = {
  async engine(ctx, port) {
    return spawnPinned(ctx.bin, ['--port', String(port), '--no-open'], {
      cpu: ctx.cpu.server, ready: null, env: cleanEnv({ LEURIA_HOME: ctx.state.home }),
    });
  },
  async nginx(ctx, port) {
    const prefix = ctx.state.nginxPrefix;
    fs.mkdirSync(path.join(prefix, 'tmp'), { recursive: true });
    const conf = path.join(prefix, 'nginx.conf');  // starts are sequential: one file, rewritten
    fs.writeFileSync(conf, nginxConfig({ prefix, port, locations: [healthLocation(BODY)] }));
    return spawnPinned(NGINX, ['-p', prefix, '-c', conf, '-e', path.join(prefix, 'error.log')], { cpu: ctx.cpu.server, ready: null });
  },
  async floor(ctx, port) {
    return spawnPinned(path.join(FLOORS, 'epoll-http'), [String(port), BODY], { cpu: ctx.cpu.server, ready: null });
  },
};

/** One cold start: {ms, cpuMs} (cpuMs of the whole process tree, read at the first 200). */
async function coldStart(contender, ctx) {
  const port = await freePort();
  const t0 = performance.now();
  const h = await spawners[contender](ctx, port);
  try {
    const r = await untilOk(port, { timeoutMs: 15000, isDead: () => !!h.exitInfo });
    const ms = performance.now() - t0;
    if (!r.ok) throw new Error(`${contender}: no 200 within 15 s (exit ${JSON.stringify(h.exitInfo)}): ${h.stderr.slice(0, 500)}`);
    const cpuMs = treePids(h.pid).reduce((a, p) => a + cpuNs(p), 0) / 1e6;
    return { ms, cpuMs, attempts: r.attempts };
  } finally {
    await h.stop();
  }
}

export default {
  id: '10',
  title: 'Cold start to the first 200 of GET /health',
  contenders: ['engine', 'nginx', 'floor'],
  baseline: 'nginx',
  figures: {
    p50_ms: { label: 'spawn to first 200, p50', unit: 'ms', better: 'lower' },
    p90_ms: { label: 'spawn to first 200, p90', unit: 'ms', better: 'lower' },
    min_ms: { label: 'spawn to first 200, min', unit: 'ms', better: 'lower' },
    cpu_ms: { label: 'CPU until the first 200, p50', unit: 'ms', better: 'lower' },
  },
  distUnit: { coldstart: 'ms' },
  targets: [{ figure: 'p50_ms', contender: 'engine', vs: 'nginx', max: 1, text: 'cold start ≤ nginx' }],
  notes: 'Each round: one unmeasured start, then N measured starts (30, or 10 with --quick) of one contender.',

  async setup(ctx) {
    return {
      home: await fsp.mkdtemp(path.join(os.tmpdir(), 'leuria-bench-cold-')),
      nginxPrefix: path.join(BUILD, 'nginx', `cold-${process.pid}`),
      reps: ctx.quick ? 10 : 30,
    };
  },

  async teardown(ctx) {
    await fsp.rm(ctx.state.home, { recursive: true, force: true });
    await fsp.rm(ctx.state.nginxPrefix, { recursive: true, force: true });
  },

  async round(contender, ctx) {
    await coldStart(contender, ctx);  // unmeasured: page cache, the engine's home files
    const runs = [];
    for (let i = 0; i < ctx.state.reps; i++) runs.push(await coldStart(contender, ctx));
    const ms = summary(runs.map((r) => r.ms));
    const cpu = summary(runs.map((r) => r.cpuMs));
    return {
      figures: { p50_ms: ms.p50, p90_ms: ms.p90, min_ms: ms.min, cpu_ms: cpu.p50 },
      dists: { coldstart: distribution(runs.map((r) => r.ms)) },
      extra: { runs },
    };
  },
};
