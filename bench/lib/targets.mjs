// The targets, checked on the medians of one run. A target is one of:
//   {figure, contender, vs, max | min, text}   a ratio to another contender measured in the same run
//   {figure, contender, max | min, text}       an absolute bound in the figure's unit
// A target whose figures are missing (a contender failed every round) is "n/a", never a pass.

/** [{...target, value, pass: true|false|null}] */
export function checkTargets(targets = [], medians) {
  return targets.map((t) => {
    const a = medians[t.contender]?.[t.figure];
    const b = t.vs ? medians[t.vs]?.[t.figure] : 1;
    const value = a == null || b == null || b === 0 ? null : a / b;
    let pass = null;
    if (value != null) pass = (t.max == null || value <= t.max) && (t.min == null || value >= t.min);
    return { ...t, value, pass };
  });
}
