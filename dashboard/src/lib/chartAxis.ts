// Labels of a time axis, and the latest value a chart's caption tells.
import type { GapPoint } from './timeRange'

const DAY = 24 * 3600_000

/** A tick label as fine as the span: seconds under 30 minutes, the weekday over a day. */
export function timeTick(t: number, spanMs: number, full = false): string {
  const d = new Date(t)
  if (spanMs > DAY) return d.toLocaleString('en-GB', { weekday: 'short', hour: '2-digit', minute: '2-digit' })
  const seconds = full || spanMs <= 30 * 60_000
  return d.toLocaleTimeString('en-GB', seconds ? { hour: '2-digit', minute: '2-digit', second: '2-digit' } : { hour: '2-digit', minute: '2-digit' })
}

const hhmm = (t: number) => new Date(t).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' })

/**
 * The series' value at its last point, or, when that point is a gap, since
 * when it has had none: a value that stopped is not shown as current.
 */
export function latestOf(points: GapPoint[]): string {
  const last = points[points.length - 1]
  if (!last) return 'no data'
  if (last.v !== null) return `${last.v.toLocaleString('en-US')} at ${hhmm(last.t)}`
  for (let i = points.length - 2; i >= 0; i--) {
    if (points[i]!.v !== null) return `no data since ${hhmm(points[i + 1]!.t)}`
  }
  return 'no data in the range'
}
