// The targets' verdicts across whole runs of the suite: for each target, pass or miss in each run that ran
// every scenario, and in how many of them it held. One table says little on this machine, whose speed moves
// by the hour and whose slow spells can fall in one contender's round: a target met in nine runs of nine
// is met, one met in five of nine sits at its bound (docs/PERFORMANCE.md, "Where the engine stands").
// Read by bench/verdicts; pure functions here, so bench/lib/verdicts.test.mjs can check them.

import { AB } from './ab.mjs';
import { fmt as figure, ratio } from './table.mjs';

/** `<stamp>-<scenario>.json` → {stamp, id}, or null for any other name (.dat, .png, other files). */
export function parseName(name) {
  const m = /^(\d{4}-\d\d-\d\d-\d{6})-(\d+)\.json$/.exec(name);
  return m ? { stamp: m[1], id: m[2] } : null;
}

/**
 * The whole runs among `names`: stamps that have a result for every scenario in `ids`, oldest first
 * (a stamp is a run's start, and one run writes every scenario it ran under it). Returns
 * [{stamp, files: {id: name}}].
 */
export function wholeRuns(names, ids) {
  const byStamp = new Map();
  for (const name of names) {
    const p = parseName(name);
    if (!p) continue;
    if (!byStamp.has(p.stamp)) byStamp.set(p.stamp, {});
    byStamp.get(p.stamp)[p.id] = name;
  }
  return [...byStamp.entries()]
    .filter(([, files]) => ids.every((id) => files[id]))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([stamp, files]) => ({ stamp, files }));
}

/**
 * The matrix: `runs` is [{stamp, results: [result JSON of each scenario]}]. Returns
 * [{id, text, verdicts: [{stamp, pass, value}], held, of}] in the order the targets first appear;
 * a target a run did not check (added later) has no verdict there, and n/a (pass null) is not counted
 * as held.
 */
export function matrix(runs) {
  const rows = new Map();
  for (const run of runs) {
    for (const res of run.results) {
      for (const t of res.checked || []) {
        if (t.contender === AB || t.vs === AB) continue;  // bench/run --ab: the other binary's twin of a target
        const key = `${res.scenario.id}\u0000${t.text}`;
        const unit = t.vs ? '' : res.scenario.figures?.[t.figure]?.unit ?? '';
        if (!rows.has(key)) rows.set(key, { id: res.scenario.id, text: t.text, vs: t.vs, unit, verdicts: [] });
        rows.get(key).verdicts.push({ stamp: run.stamp, pass: t.pass, value: t.value });
      }
    }
  }
  return [...rows.values()].map((r) => ({
    ...r,
    held: r.verdicts.filter((v) => v.pass === true).length,
    of: r.verdicts.length,
  }));
}

const fmt = (v, vs) => (vs ? ratio(v) : figure(v));

/**
 * The matrix as text: one line per target, a column per run (its value, `*` where it missed), headed by
 * the run's date and time, and by its commit where `commits` ({stamp: commit}) knows it.
 */
export function formatMatrix(rows, stamps, commits = {}) {
  const head = stamps.map((s) => `${s.slice(5, 10)} ${s.slice(11, 15)}`);
  const known = stamps.some((s) => commits[s]);
  const cell = (r, s) => {
    const v = r.verdicts.find((x) => x.stamp === s);
    if (!v) return '';
    return `${fmt(v.value, r.vs)}${v.pass === false ? '*' : v.pass === null ? '?' : ''}`;
  };
  const cells = rows.map((r) => stamps.map((s) => cell(r, s)));
  const width = Math.max(10, ...head.map((h) => h.length), ...cells.flat().map((c) => c.length),
    ...stamps.map((s) => (commits[s] ?? '').length));
  const label = (r) => {
    const text = r.text.length > 58 ? `${r.text.slice(0, 57)}…` : r.text;
    return `${r.id.padStart(2)} ${text}${r.unit ? ` (${r.unit})` : ''}`;
  };
  const lw = Math.max(...rows.map((r) => label(r).length), 6);
  const lines = [`${'target'.padEnd(lw)}  ${head.map((h) => h.padStart(width)).join(' ')}  held`];
  if (known) lines.push(`${'commit'.padEnd(lw)}  ${stamps.map((s) => (commits[s] ?? '?').padStart(width)).join(' ')}`);
  rows.forEach((r, i) => {
    lines.push(`${label(r).padEnd(lw)}  ${cells[i].map((c) => c.padStart(width)).join(' ')}  ${r.held}/${r.of}`);
  });
  return lines.join('\n');
}
