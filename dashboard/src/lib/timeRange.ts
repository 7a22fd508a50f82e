// The Overview's time ranges, the Prometheus step and look-back for each
// (about 120 points a chart), and matrix answers as chart points on the
// range's own grid: a step Prometheus has nothing for is a gap (null), not a
// point left out that the line would join across.
import type { Point } from './series'

export const RANGES = { '15m': 15 * 60, '1h': 3600, '6h': 6 * 3600, '24h': 24 * 3600, '7d': 7 * 24 * 3600 } as const
export type RangeKey = keyof typeof RANGES

/** A chart point that may be a gap: null where Prometheus holds no sample for the step. */
export interface GapPoint {
  t: number
  v: number | null
}

/**
 * The shortest look-back of a step's selector: two of the deployment's
 * 15 s scrapes, so one missed scrape is not a gap but a stopped target is.
 */
export const LOOKBACK_MIN_SECONDS = 30

export function isRange(s: string): s is RangeKey {
  return s in RANGES
}

/**
 * Start, end and step (seconds) of a range ending now (to the second: a
 * last step aligned before now would leave the newest samples, up to a
 * whole step of a week's range, out of every point), and the look-back each
 * step's selector covers: the whole step (at least LOOKBACK_MIN_SECONDS), so
 * a sample between two steps is read by one of them, whatever the range.
 */
export function rangeWindow(key: RangeKey, nowMs: number): { start: number; end: number; step: number; lookback: number } {
  const seconds = RANGES[key]
  const step = Math.max(5, Math.round(seconds / 120))
  const end = Math.floor(nowMs / 1000)
  return { start: end - seconds, end, step, lookback: Math.max(step, LOOKBACK_MIN_SECONDS) }
}

/** A query's $lookback (each step's selector range) set to lookback seconds. */
export function withLookback(query: string, lookback: number): string {
  return query.replaceAll('$lookback', `${lookback}s`)
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

/** Points on every step from start to end (seconds), null where none was given. */
export function onGrid(points: Point[], start: number, end: number, step: number): GapPoint[] {
  const byT = new Map(points.map((p) => [p.t, p.v]))
  const out: GapPoint[] = []
  for (let t = start; t <= end; t += step) out.push({ t: t * 1000, v: byT.get(t * 1000) ?? null })
  return out
}

/** The matrix's series split by one label's value, each on the range's grid. */
export function seriesByLabel(
  result: { metric: Record<string, string>; values: [number, string][] }[],
  label: string, start: number, end: number, step: number,
): Record<string, GapPoint[]> {
  const groups: Record<string, { values: [number, string][] }[]> = {}
  for (const s of result) (groups[s.metric[label] ?? ''] ??= []).push(s)
  return Object.fromEntries(Object.entries(groups).map(([k, g]) => [k, onGrid(matrixPoints(g), start, end, step)]))
}
