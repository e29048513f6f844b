// Small statistics for the benchmark: medians of repeated runs and latency percentiles.

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Nearest-rank percentile (p in 0..100) of a sample. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)));
  return s[rank - 1];
}

/** Rounds to 3 significant digits for the report, but never drops integer digits (12,246 req/s stays). */
export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const mag = Math.floor(Math.log10(Math.abs(x)));
  const f = Math.pow(10, Math.max(0, digits - 1 - mag));
  return Math.round(x * f) / f;
}
