// Two or more engine binaries, alone, in alternated runs of one page-tool workload: the way to see a
// change of a few µs a call that the suite's rounds (minutes apart, each with its baselines between)
// lose in the machine's noise. `node bench/lib/alternate.mjs call|ping RUNS CALLS BIN…`, normally
// through bench/alternate, which builds the C clients and runs this pinned to CPU 1 (as bench/run.mjs is):
//   call  scenario 4's tool calls (the lean C client as MCP client and page, one call at a time)
//   ping  scenario 6's page pings on its tool channel
// Each run starts every binary's engine in turn (the order rotated run by run), measures CALLS calls
// after a tenth as many warm-up calls, and prints one tab-separated line per binary and run: the
// client's p50 and p99, and the engine's CPU per call, warm-up included, as the scenarios count it:
// cpu_us from utime+stime (what scenario 4's target reads), cpu_ns_us from schedstat.
// Then per binary: the medians, and in how many runs it read lower than the first binary.
import path from 'node:path';
import './env.mjs';
import { useEngineBinary } from '../../tests/e2e/lib/engine.mjs';
import { startLoadEngine } from './contenders.mjs';
import { CPU } from './proc.mjs';
import { usageWindow } from './procfs.mjs';
import { median } from './stats.mjs';
import { mcpArgs, pageChannel, toolcall } from './toolcall.mjs';

const [mode, runsArg, callsArg, ...bins] = process.argv.slice(2);
if (!['call', 'ping'].includes(mode) || !(Number(runsArg) > 0) || !(Number(callsArg) > 0) || bins.length === 0) {
  console.error('usage: node bench/lib/alternate.mjs call|ping RUNS CALLS BIN…');
  process.exit(2);
}
const runs = Number(runsArg);
const cnt = { n: Number(callsArg), warmup: Math.max(1, Math.round(Number(callsArg) / 10)) };

async function once(bin) {
  useEngineBinary(path.resolve(bin));
  const eng = await startLoadEngine({ sites: 1 });
  try {
    const page = await pageChannel(eng);
    const args = mode === 'call'
      ? ['call', [...(await mcpArgs(eng, page.token)), '--channel', page.channel, '--origin', page.origin, '--text', 'hello']]
      : ['ping', ['--channel', page.channel, '--origin', page.origin]];
    const w = usageWindow(eng.pids());
    const r = await toolcall(args[0], eng.port, args[1], cnt, CPU.latencyClient);
    const u = w.stop();
    return { p50_us: r.p50_us, p99_us: r.p99_us, cpu_us: u.cpuUs / (cnt.n + cnt.warmup), cpu_ns_us: u.cpuNsUs / (cnt.n + cnt.warmup) };
  } finally {
    await eng.stop();
  }
}

const figures = ['p50_us', 'p99_us', 'cpu_us', 'cpu_ns_us'];
const got = bins.map(() => []);
console.log(['run', 'binary', ...figures].join('\t'));
for (let run = 0; run < runs; run++) {
  for (let k = 0; k < bins.length; k++) {
    const i = (k + run) % bins.length;
    const f = await once(bins[i]);
    got[i][run] = f;
    console.log([run + 1, bins[i], ...figures.map((x) => f[x].toFixed(2))].join('\t'));
  }
}
for (let i = 0; i < bins.length; i++) {
  const parts = figures.map((x) => {
    const m = median(got[i].map((f) => f[x]));
    const lower = i === 0 ? '' : ` (lower in ${got[i].filter((f, r) => f[x] < got[0][r][x]).length} of ${runs})`;
    return `${x} ${m.toFixed(2)}${lower}`;
  });
  console.log(`# ${bins[i]}: medians ${parts.join(', ')}`);
}
