// `bench/run --ab BIN`: a second engine binary measured in the same run as the first, as one more
// contender, `engine-b`, whose round comes beside the engine's in every round (after it in odd rounds,
// before it in even ones). Two binaries compared in alternated whole runs are minutes apart, and
// a slow spell of the machine can fall on one of them; in the same rounds they share it, and each
// round's pair can be read alone. The scenario is not told: its `engine` round runs with the other
// binary (bench/run.mjs switches it), so every scenario takes part without a line of its own.

import { fmt, ratio as showRatio } from './table.mjs';
import { value as ratio } from './targets.mjs';

export const AB = 'engine-b';

/** The contenders with engine-b right after engine; unchanged when there is no engine. */
export function abContenders(contenders) {
  const i = contenders.indexOf('engine');
  if (i < 0) return [...contenders];
  return [...contenders.slice(0, i + 1), AB, ...contenders.slice(i + 1)];
}

/**
 * The contenders in the order round `round` runs them: in even rounds engine-b goes first of the two, so
 * that neither binary always follows the other (what ran just before a round warms or chills the
 * caches it shares with it).
 */
export function abRoundOrder(contenders, round) {
  const i = contenders.indexOf('engine');
  if (round % 2 === 1 || i < 0 || contenders[i + 1] !== AB) return contenders;
  const out = [...contenders];
  [out[i], out[i + 1]] = [AB, 'engine'];
  return out;
}

/**
 * Every target that names the engine, followed by the same target for engine-b (its text marked), so
 * each binary gets its own verdict against the same baselines.
 */
export function abTargets(targets = []) {
  const swap = (c) => (c === 'engine' ? AB : c);
  return targets.flatMap((t) => {
    if (t.contender !== 'engine' && t.vs !== 'engine') return [t];
    return [t, { ...t, contender: swap(t.contender), ...(t.vs ? { vs: swap(t.vs) } : {}), text: `${t.text} (${AB})` }];
  });
}

/**
 * engine-b against engine, figure by figure: the two medians, their ratio, each round's ratio (the
 * two rounds run a few seconds apart) and in how many rounds engine-b did better (by the figure's
 * `better`: lower or higher). Figures either side lacks are left out.
 * Returns [{figure, label, unit, a, b, ratio, rounds: [b/a per round], better, of}].
 */
export function abCompare(res) {
  const { scenario, medians, raw } = res;
  const a = medians.engine;
  const b = medians[AB];
  if (!a || !b) return [];
  const rows = [];
  for (const [key, def] of Object.entries(scenario.figures || {})) {
    if (a[key] == null || b[key] == null) continue;
    const theirs = new Map((raw.engine || []).map((r) => [r.round, r.figures?.[key]]));
    const rounds = [];
    let better = 0;
    for (const r of raw[AB] || []) {
      const x = theirs.get(r.round);
      const y = r.figures?.[key];
      const q = ratio(y, x);
      if (q == null || !Number.isFinite(q)) continue;
      rounds.push(q);
      if (def.better === 'higher' ? y > x : y < x) better++;
    }
    rows.push({ figure: key, label: def.label, unit: def.unit, a: a[key], b: b[key], ratio: ratio(b[key], a[key]), rounds, better, of: rounds.length });
  }
  return rows;
}

/** The comparison as the run prints it, after the scenario's table; '' without engine-b's figures. */
export function formatAb(res) {
  const rows = abCompare(res);
  if (!rows.length) return '';
  const a = res.options?.bin ?? 'engine';
  const b = res.options?.ab ?? AB;
  const lines = [`A/B: ${AB} (${b}) against engine (${a}), in the same rounds`];
  const label = (r) => `${r.label}${r.unit ? ` (${r.unit})` : ''}`;
  const w = Math.max(...rows.map((r) => label(r).length));
  const cells = rows.map((r) => [fmt(r.a), fmt(r.b), showRatio(r.ratio)]);
  const cw = [0, 1, 2].map((i) => Math.max(...cells.map((c) => c[i].length), ['engine', AB, `${AB}/engine`][i].length));
  const line = (first, cs) => `  ${first.padEnd(w)}  ${cs.map((c, i) => c.padStart(cw[i])).join('  ')}`;
  lines.push(line('figure', ['engine', AB, `${AB}/engine`]));
  rows.forEach((r, i) => {
    lines.push(line(label(r), cells[i]));
    if (r.of > 1) lines.push(`  ${''.padEnd(w)}  rounds: ${r.rounds.map((q) => q.toFixed(2)).join(' ')}  (${AB} better in ${r.better} of ${r.of})`);
  });
  return lines.join('\n');
}
