// Order statistics for the bench: the median of the rounds (the figure quoted), nearest-rank
// percentiles of raw samples, and a fixed grid of percentiles so every contender's latency
// distribution can be drawn on the same axis (bench/plot.gp).

/** The median of numbers (mean of the middle two for an even count); null for none. */
export function median(values) {
  const s = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Nearest-rank percentile (q in 0..1) of an ascending array: an observed value, never interpolated. */
export function percentileSorted(sorted, q) {
  if (!sorted.length) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1];
}

export function percentile(values, q) {
  return percentileSorted([...values].sort((a, b) => a - b), q);
}

/** The percentiles every latency distribution is reported on (in percent). */
export const PCT_GRID = [1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9];

/** [[pct, value]] of raw samples on PCT_GRID, plus the maximum as 100. */
export function distribution(values) {
  const s = [...values].sort((a, b) => a - b);
  if (!s.length) return [];
  return [...PCT_GRID.map((p) => [p, percentileSorted(s, p / 100)]), [100, s[s.length - 1]]];
}

/** {n, min, p50, p90, p99, max, mean} of raw samples. */
export function summary(values) {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : null;
  return {
    n: s.length, min: s[0] ?? null, p50: percentileSorted(s, 0.5), p90: percentileSorted(s, 0.9),
    p99: percentileSorted(s, 0.99), max: s.length ? s[s.length - 1] : null, mean,
  };
}
