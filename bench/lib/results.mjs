// What a run leaves behind in bench/results/ (gitignored): <stamp>-<scenario>.json with every raw
// figure of every round, and for each latency series a .dat file (percentile, then one column per
// contender: the median over rounds at each percentile) drawn by bench/plot.gp into a .png.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './env.mjs';
import { median } from './stats.mjs';

/** A file-name-safe local timestamp, e.g. 2026-11-29-2231 (runs of the same day do not overwrite). */
export function stamp(d = new Date()) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

export function writeJson(dir, stem, res) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${stem}.json`);
  fs.writeFileSync(file, `${JSON.stringify(res, null, 2)}\n`);
  return file;
}

/**
 * For every series a round reported in `dists` ({series: [[pct, value]]}), the per-percentile median
 * over the rounds of each contender; written as .dat and plotted. Returns the .png paths made.
 */
export function writePlots(dir, stem, res) {
  const series = new Set();
  for (const rounds of Object.values(res.raw)) for (const r of rounds) for (const s of Object.keys(r.dists || {})) series.add(s);
  const made = [];
  if (series.size) fs.mkdirSync(dir, { recursive: true });  // a fresh clone has no bench/results/
  for (const s of series) {
    const cols = res.scenario.contenders.filter((c) => (res.raw[c] || []).some((r) => r.dists?.[s]));
    const pcts = [...new Set(cols.flatMap((c) => res.raw[c].flatMap((r) => (r.dists?.[s] || []).map(([p]) => p))))].sort((a, b) => a - b);
    const rows = pcts.map((p) => [p, ...cols.map((c) => median(res.raw[c].map((r) => r.dists?.[s]?.find(([q]) => q === p)?.[1])))]);
    const dat = path.join(dir, `${stem}-${s}.dat`);
    fs.writeFileSync(dat, [['pct', ...cols].join(' '), ...rows.map((r) => r.map((v) => (v == null ? 'NaN' : v)).join(' '))].join('\n') + '\n');
    const png = dat.replace(/\.dat$/, '.png');
    const unit = res.scenario.distUnit?.[s] || 'µs';
    const title = `scenario ${res.scenario.id} ${s}: ${res.scenario.title}${res.machine.loaded ? ' (loaded machine)' : ''}`;
    const q = (v) => `'${String(v).replace(/'/g, '')}'`;
    const r = spawnSync('gnuplot', ['-e', `datafile=${q(dat)}; outfile=${q(png)}; plottitle=${q(title)}; unit=${q(unit)}`, path.join(ROOT, 'bench/plot.gp')], { encoding: 'utf8' });
    if (r.status === 0) made.push(png);
    else console.error(`gnuplot failed for ${dat}: ${r.stderr || r.error}`);
  }
  return made;
}
