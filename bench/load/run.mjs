// The long load run (see README.md): holds idle connections, session event streams and WebMCP tool
// channels on a real engine for minutes while a client keeps being served, then closes everything.
// Prints a table and writes the raw figures to bench/results/load-<time>.json. Start it with bench/load/run.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BIN, ROOT, stopAll } from '../../tests/e2e/helpers.mjs';
import { openFilesLimit, runLoad, SESSIONS_PER_ORIGIN, startLoadEngine } from '../../tests/e2e/lib/load.mjs';

const { values: opt } = parseArgs({
  options: {
    hold: { type: 'string', default: '120' },
    idle: { type: 'string', default: '1000' },
    streams: { type: 'string', default: '500' },
    channels: { type: 'string', default: '200' },
    'idle-probe': { type: 'string', default: '10' },
    out: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (opt.help) {
  console.log('bench/load/run [--hold SECONDS=120] [--idle N=1000] [--streams N=500] [--channels N=200] [--idle-probe SECONDS=10] [--out FILE]');
  process.exit(0);
}
const n = { idle: Number(opt.idle), streams: Number(opt.streams), channels: Number(opt.channels) };
const holdMs = Number(opt.hold) * 1000;
const held = n.idle + n.streams + n.channels;
if (![...Object.values(n), holdMs].every((v) => Number.isInteger(v) && v >= 0) || n.channels > n.streams) {
  console.error('Counts and seconds are whole numbers, and --channels is at most --streams (a channel belongs to a session).');
  process.exit(2);
}
if (held + 300 > openFilesLimit()) {
  console.error(`The open-files limit (${openFilesLimit()}) is too low for ${held} connections; start through bench/load/run, or lower the numbers.`);
  process.exit(2);
}

const log = (s) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${s}`);
process.on('SIGINT', () => stopAll().finally(() => process.exit(130)));

log(`engine ${BIN}; holding ${JSON.stringify(n)} for ${opt.hold} s`);
const eng = await startLoadEngine({
  sites: Math.ceil(n.streams / SESSIONS_PER_ORIGIN),
  // The engine's cap (1,024) is below what is held; its deadlines would close the idle connections
  // (30 s for a head, 60 s between requests) long before the hold ends.
  timings: { maxConnections: Math.max(1024, held + 100), headerTimeoutMs: holdMs + 600000, idleTimeoutMs: holdMs + 600000 },
});
let r;
try {
  r = await runLoad(eng, { ...n, holdMs, idleProbeMs: Number(opt['idle-probe']) * 1000, sampleEveryMs: 1000, log });
} finally {
  await stopAll();
}

const fmt = (v) => (v == null ? '-' : v < 10 ? v.toFixed(2) : v.toFixed(1));
const row = (cells, widths) => cells.map((c, i) => String(c).padEnd(widths[i])).join('  ');
const W = [26, 7, 9, 9, 9];
console.log(`\nLoad: ${n.idle} idle connections, ${n.streams} event streams, ${n.channels} tool channels, held ${opt.hold} s`);
console.log(`(opened in ${r.setupMs} ms; closed and settled in ${r.closeMs} ms; still open at the end: ${JSON.stringify(r.stillOpen)})\n`);
console.log(row(['latency (ms)', 'n', 'p50', 'p99', 'max'], W));
for (const [phase, l] of Object.entries(r.latency))
  for (const [what, p] of Object.entries(l)) console.log(row([`${what === 'health' ? 'GET /health' : 'session turn'}, ${phase}`, p.n, fmt(p.p50), fmt(p.p99), fmt(p.max)], W));
console.log(`\n${row(['engine', 'before', 'during', 'after'], [26, 9, 9, 9])}`);
const u = r.usage;
console.log(row(['RSS (MB)', (u.before.rssKb / 1024).toFixed(1), (u.during.rssKb / 1024).toFixed(1), (u.after.rssKb / 1024).toFixed(1)], [26, 9, 9, 9]));
console.log(row(['descriptors', u.before.fds, u.during.fds, u.after.fds], [26, 9, 9, 9]));
console.log(`\nclient errors: ${r.errors.length}${r.errors.length ? `: ${r.errors.slice(0, 5).join('; ')}` : ''}`);

let commit = '';
try {
  commit = execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
} catch {}
const out = opt.out || path.join(ROOT, 'bench/results', `load-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.mkdirSync(path.dirname(out), { recursive: true });
const machine = { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, memMb: Math.round(os.totalmem() / 2 ** 20), kernel: os.release(), node: process.version };
fs.writeFileSync(out, JSON.stringify({ when: new Date().toISOString(), bin: BIN, commit, machine, ...r }, null, 1));
console.log(`raw figures: ${path.relative(process.cwd(), out)}`);
process.exit(r.errors.length || u.after.fds > u.before.fds + 2 ? 1 : 0);
