// The table a run prints: one row per figure, the median of each contender, the ratio of each other
// contender to the scenario's baseline, then the targets with a pass/miss mark. Plain text: it goes
// to a terminal and, pasted, into docs/PERFORMANCE.md.

/** A figure as the table prints it: whole numbers grouped, small ones to two significant digits. */
export const fmt = (v) => {
  if (v == null || Number.isNaN(v)) return '-';
  const a = Math.abs(v);
  if (Number.isInteger(v) || a >= 1000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(2);  // small figures (an idle CPU %) keep two significant digits: 0.053, not 0.05
};
/** A ratio as the table prints it: two decimals and ×, `-` where there is none. */
export const ratio = (v) => (v == null || !Number.isFinite(v) ? '-' : `${v.toFixed(2)}×`);

function render(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ')).join('\n');
}

/** The text of one scenario's result (see bench/run.mjs for the shape of `res`). */
export function formatTable(res) {
  const { scenario, medians, checked, machine, options } = res;
  const cs = scenario.contenders.filter((c) => medians[c]);
  const base = scenario.baseline && cs.includes(scenario.baseline) ? scenario.baseline : null;
  const others = base ? cs.filter((c) => c !== base) : [];
  const head = ['figure', ...cs, ...others.map((c) => `${c}/${base}`)];
  const rows = [head];
  for (const [key, def] of Object.entries(scenario.figures)) {
    const vals = cs.map((c) => medians[c][key]);
    if (vals.every((v) => v == null)) continue;
    const label = `${def.label}${def.unit ? ` (${def.unit})` : ''}`;
    rows.push([label, ...vals.map(fmt), ...others.map((c) => ratio(medians[c][key] / medians[base][key]))]);
  }
  const load = `load ${machine.loadBefore[0].toFixed(2)} → ${machine.loadAfter[0].toFixed(2)} on ${machine.cpus} CPUs`;
  const lines = [
    `Scenario ${scenario.id}: ${scenario.title}`,
    `${options.rounds} interleaved rounds, medians; ${load}${machine.loaded ? ' (LOADED: provisional figures)' : ''}`,
    render(rows),
  ];
  if (checked.length) {
    lines.push('targets:');
    for (const t of checked) {
      const mark = t.pass === null ? ' n/a' : t.pass ? 'pass' : 'MISS';
      const bound = t.max != null ? `≤ ${t.max}` : `≥ ${t.min}`;
      const got = t.value == null ? '-' : t.vs ? ratio(t.value) : fmt(t.value);
      lines.push(`  ${mark}  ${t.text}  [${t.contender}${t.vs ? `/${t.vs}` : ''} ${t.figure} = ${got}, ${bound}]`);
      // Round by round: how often the bound held in a round of its own (the noise a verdict stands on).
      if (t.rounds?.length > 1) {
        const each = t.rounds.map((v) => (t.vs ? v.toFixed(2) : fmt(v))).join(' ');
        lines.push(`        rounds: ${each}  (the bound held in ${t.roundsWithin} of ${t.rounds.length})`);
      }
    }
  }
  if (res.errors.length) lines.push(`errors (${res.errors.length}):`, ...res.errors.slice(0, 5).map((e) => `  ${e}`));
  return lines.join('\n');
}
