// Labels of a time axis, and the latest value a chart's caption tells.
import type { GapPoint } from './timeRange'

const MINUTE = 60_000
const HOUR = 3600_000
const DAY = 24 * HOUR

/** The steps ticks may fall on: each a round time (on the hour, the quarter hour, midnight). */
export const TICK_STEPS = [15_000, 30_000, MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY] as const

/**
 * Tick positions on round local times within [min, max]: the finest step of
 * TICK_STEPS that gives at most maxTicks, each tick a multiple of it in
 * local time (06:00, 12:00, midnight; never "02:13").
 */
export function roundTicks(min: number, max: number, maxTicks = 8): number[] {
  if (!(max > min)) return []
  const span = max - min
  const step = TICK_STEPS.find((s) => span / s <= maxTicks) ?? DAY * Math.ceil(span / DAY / maxTicks)
  // Local time is UTC less the offset (minutes west of UTC, as Date gives it).
  const offset = new Date(min).getTimezoneOffset() * MINUTE
  const ticks: number[] = []
  for (let t = Math.ceil((min - offset) / step) * step + offset; t <= max; t += step) ticks.push(t)
  return ticks
}

/** A step in words: "15 s", "5 min", "2 h", "1 day". */
export function stepLabel(ms: number): string {
  if (ms >= DAY && ms % DAY === 0) return ms === DAY ? '1 day' : `${ms / DAY} days`
  if (ms >= HOUR && ms % HOUR === 0) return `${ms / HOUR} h`
  if (ms >= MINUTE && ms % MINUTE === 0) return `${ms / MINUTE} min`
  return `${Math.round(ms / 1000)} s`
}

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
