// The benchmarks' summary of a list of timings (or rates): the median, the 10th, 90th and 95th
// percentiles (each the smallest value with at least that share of the values at or below
// it), the least, the largest and how many.
export function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
  return { median: at(0.5), p10: at(0.1), p90: at(0.9), p95: at(0.95), min: sorted[0], max: sorted.at(-1), count: sorted.length };
}
