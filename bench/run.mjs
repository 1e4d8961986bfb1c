// The bench driver: `node bench/run.mjs [scenario…] [--rounds N] [--quick] [--ab BIN] [--list]`, normally through
// bench/run, which builds what is measured first. For each scenario it runs every contender in
// interleaved rounds (A B C, A B C, …: a slow minute of the machine hits all of them alike), takes the
// median of each figure over the rounds, prints the table of ratios against the scenario's baseline
// with the targets marked, and writes bench/results/<stamp>-<scenario>.json (+ .dat/.png plots).
// With --ab BIN a second engine binary runs as one more contender, engine-b (bench/lib/ab.mjs).
// Scenarios are the files of bench/scenarios/; bench/README.md describes their interface.

import { LEURIA_BIN, RESULTS, ROOT } from './lib/env.mjs';  // first: sets LEURIA_BIN for tests/e2e/lib
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { useEngineBinary } from '../tests/e2e/lib/engine.mjs';
import { AB, abContenders, abRoundOrder, abTargets, formatAb } from './lib/ab.mjs';
import { CPU } from './lib/proc.mjs';
import { machineAfter, machineBefore } from './lib/machine.mjs';
import { median } from './lib/stats.mjs';
import { formatTable } from './lib/table.mjs';
import { checkTargets } from './lib/targets.mjs';
import { stamp, writeJson, writePlots } from './lib/results.mjs';

function usage(scenarios) {
  return `usage: bench/run [scenario…] [--rounds N] [--quick] [--ab BIN] [--list]
  scenario   ids of bench/scenarios/*.mjs (default: all): ${scenarios.map((s) => s.id).join(' ')}
  --rounds N interleaved rounds per scenario (at least 3; default 5)
  --quick    shorter windows and fewer repetitions (a check that it runs, not figures to quote)
  --ab BIN   also run the engine binary BIN, as contender ${AB}, beside the engine in every round (after
             it in odd rounds, before it in even ones), with its own verdicts and a comparison of the two
  --list     list the scenarios and exit`;
}

function parseArgs(argv) {
  const o = { ids: [], rounds: 5, quick: false, list: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--rounds') o.rounds = Number(argv[++i]);
    else if (a.startsWith('--rounds=')) o.rounds = Number(a.slice(9));
    else if (a === '--quick') o.quick = true;
    else if (a === '--ab') o.ab = argv[++i];
    else if (a.startsWith('--ab=')) o.ab = a.slice(5);
    else if (a === '--list') o.list = true;
    else if (a === '-h' || a === '--help') o.help = true;
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else o.ids.push(a);
  }
  if (!Number.isInteger(o.rounds) || o.rounds < 3) throw new Error('--rounds must be a whole number, at least 3 (a median of fewer says little)');
  if ('ab' in o) {
    if (!o.ab) throw new Error('--ab needs the path of an engine binary');
    o.ab = path.resolve(o.ab);
    try {
      fs.accessSync(o.ab, fs.constants.X_OK);
    } catch {
      throw new Error(`--ab ${o.ab}: no executable file there`);
    }
    if (!fs.statSync(o.ab).isFile()) throw new Error(`--ab ${o.ab}: not a file`);
  }
  return o;
}

async function loadScenarios() {
  const dir = path.join(ROOT, 'bench/scenarios');
  const out = [];
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.mjs')).sort()) {
    const s = (await import(pathToFileURL(path.join(dir, f)))).default;
    if (!s?.id || !s.round) throw new Error(`bench/scenarios/${f}: no default export with id and round()`);
    out.push({ file: f, ...s });
  }
  return out.sort((a, b) => Number(a.id) - Number(b.id) || String(a.id).localeCompare(String(b.id)));
}

async function runScenario(s, opts) {
  const log = (m) => console.error(`[${s.id}] ${m}`);
  const machine = await machineBefore();
  const ctx = { rounds: opts.rounds, quick: opts.quick, cpu: CPU, bin: LEURIA_BIN, log, state: undefined, round: 0 };
  const contenders = opts.ab ? abContenders(s.contenders) : s.contenders;
  const raw = Object.fromEntries(contenders.map((c) => [c, []]));
  const errors = [];
  const startedAt = new Date().toISOString();
  if (s.setup) ctx.state = await s.setup(ctx);
  try {
    for (let r = 1; r <= opts.rounds; r++) {
      ctx.round = r;
      for (const c of abRoundOrder(contenders, r)) {
        const t0 = performance.now();
        try {
          const out = c === AB ? await roundOf(opts.ab, s, ctx) : await s.round(c, ctx);
          raw[c].push({ round: r, ...out });
          log(`round ${r}/${opts.rounds} ${c}: ${Object.entries(out.figures).map(([k, v]) => `${k}=${v == null ? '-' : +v.toFixed(2)}`).join(' ')} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
        } catch (e) {
          // One failed round is recorded and the run goes on: the medians use the rounds that worked.
          raw[c].push({ round: r, figures: {}, error: String(e.stack || e) });
          errors.push(`round ${r} ${c}: ${String(e.message || e).split('\n')[0]}`);
          log(`round ${r} ${c} FAILED: ${e.stack || e}`);
        }
      }
    }
  } finally {
    if (s.teardown) await s.teardown(ctx);
  }
  const medians = {};
  for (const c of contenders) {
    const keys = new Set(raw[c].flatMap((r) => Object.keys(r.figures)));
    if (!keys.size) continue;
    medians[c] = Object.fromEntries([...keys].map((k) => [k, median(raw[c].map((r) => r.figures[k]))]));
  }
  const scenario = { id: s.id, title: s.title, file: s.file, contenders, baseline: s.baseline, figures: s.figures, distUnit: s.distUnit, notes: s.notes };
  const res = {
    scenario, startedAt, finishedAt: new Date().toISOString(),
    machine: machineAfter(machine),
    options: { rounds: opts.rounds, quick: opts.quick, bin: LEURIA_BIN, ...(opts.ab ? { ab: opts.ab } : {}), commit: COMMIT, node: process.version, host: os.hostname() },
    raw, medians, errors,
  };
  res.checked = checkTargets(opts.ab ? abTargets(s.targets) : s.targets, medians, raw);
  return res;
}

// engine-b's round: the scenario's engine round, with every engine it starts running `bin` (the
// starts of tests/e2e/lib/engine.mjs, and ctx.bin for a scenario that spawns the binary itself).
async function roundOf(bin, s, ctx) {
  const before = useEngineBinary(bin);
  ctx.bin = bin;
  try {
    return await s.round('engine', ctx);
  } finally {
    useEngineBinary(before);
    ctx.bin = LEURIA_BIN;
  }
}

// The checkout the run measured (`-dirty`: with changes not committed), for bench/verdicts and whoever reads
// the JSON later; null outside a git checkout. LEURIA_BIN may name another binary: `options.bin` says which.
const COMMIT = (() => {
  const r = spawnSync('git', ['-C', ROOT, 'describe', '--always', '--dirty', '--abbrev=7'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
})();

async function main() {
  const scenarios = await loadScenarios();
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`${e.message}\n${usage(scenarios)}`);
    process.exit(2);
  }
  if (opts.help || opts.list) {
    console.log(opts.help ? usage(scenarios) : scenarios.map((s) => `${s.id}\t${s.title}`).join('\n'));
    return;
  }
  const unknown = opts.ids.filter((id) => !scenarios.some((s) => s.id === id));
  if (unknown.length) {
    console.error(`no scenario ${unknown.join(', ')}\n${usage(scenarios)}`);
    process.exit(2);
  }
  const chosen = opts.ids.length ? scenarios.filter((s) => opts.ids.includes(s.id)) : scenarios;
  const st = stamp();
  let failed = false;
  for (const s of chosen) {
    const res = await runScenario(s, opts);
    const stem = `${st}-${s.id}`;
    res.plots = writePlots(RESULTS, stem, res);
    const file = writeJson(RESULTS, stem, res);
    const ab = opts.ab ? formatAb(res) : '';
    console.log(`\n${formatTable(res)}${ab ? `\n${ab}` : ''}\nraw figures: ${path.relative(process.cwd(), file)}${res.plots.length ? `\nplots: ${res.plots.map((p) => path.relative(process.cwd(), p)).join(' ')}` : ''}\n`);
    if (res.errors.length) failed = true;
  }
  // A missed target is a finding, not a failure of the bench; rounds that failed are.
  process.exitCode = failed ? 1 : 0;
}

main().then(() => process.exit(process.exitCode ?? 0), (e) => {
  console.error(e.stack || e);
  process.exit(1);
});
