// The targets, checked on the medians of one run. A target is one of:
//   {figure, contender, vs, max | min, text}   a ratio to another contender measured in the same run
//   {figure, contender, max | min, text}       an absolute bound in the figure's unit
// A target whose figures are missing (a contender failed every round) is "n/a", never a pass.
//
// Each target is also read round by round: its value from the figures of one round alone (for a ratio,
// both contenders' figures of that round). The medians decide pass or miss; the rounds show whether a
// verdict is one the noise could turn (a miss that is within the bound in most rounds, or a pass in few).

/** a / b, or null where either is missing or b is 0. */
export const value = (a, b) => (a == null || b == null || b === 0 ? null : a / b);
const within = (t, v) => (t.max == null || v <= t.max) && (t.min == null || v >= t.min);

/** The target's value in each round where every figure it needs was measured, in round order. */
export function roundValues(t, raw = {}) {
  const mine = raw[t.contender] ?? [];
  const theirs = t.vs ? new Map((raw[t.vs] ?? []).map((r) => [r.round, r.figures?.[t.figure]])) : null;
  const out = [];
  for (const r of mine) {
    const v = value(r.figures?.[t.figure], t.vs ? theirs.get(r.round) : 1);
    if (v != null && Number.isFinite(v)) out.push(v);
  }
  return out;
}

/** [{...target, value, pass: true|false|null, rounds: [value per round], roundsWithin}] */
export function checkTargets(targets = [], medians, raw) {
  return targets.map((t) => {
    const v = value(medians[t.contender]?.[t.figure], t.vs ? medians[t.vs]?.[t.figure] : 1);
    const rounds = roundValues(t, raw);
    return {
      ...t,
      value: v,
      pass: v == null ? null : within(t, v),
      rounds,
      roundsWithin: rounds.filter((x) => within(t, x)).length,
    };
  });
}
