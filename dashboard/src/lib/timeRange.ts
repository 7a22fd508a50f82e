// The Overview's time ranges and the Prometheus step for each (about 120
// points a chart), and the matrix answer as chart points.
import type { Point } from './series'

export const RANGES = { '15m': 15 * 60, '1h': 3600, '6h': 6 * 3600, '24h': 24 * 3600, '7d': 7 * 24 * 3600 } as const
export type RangeKey = keyof typeof RANGES

export function isRange(s: string): s is RangeKey {
  return s in RANGES
}

/** Start, end and step (seconds) of a range ending at now, aligned to the step so refreshes reuse the same points. */
export function rangeWindow(key: RangeKey, nowMs: number): { start: number; end: number; step: number } {
  const seconds = RANGES[key]
  const step = Math.max(5, Math.round(seconds / 120))
  const end = Math.floor(nowMs / 1000 / step) * step
  return { start: end - seconds, end, step }
}

/** Every series of a matrix summed per timestamp (ms), in time order. */
export function matrixPoints(result: { values: [number, string][] }[]): Point[] {
  const byT = new Map<number, number>()
  for (const s of result) {
    for (const [t, v] of s.values) {
      const n = Number(v)
      if (!Number.isFinite(n)) continue
      byT.set(t * 1000, (byT.get(t * 1000) ?? 0) + n)
    }
  }
  return [...byT.entries()].sort((a, b) => a[0] - b[0]).map(([t, v]) => ({ t, v }))
}
