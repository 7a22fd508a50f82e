import { ref, type Ref } from 'vue'

export interface Point {
  t: number
  v: number
}

// Series sampled by the browser while the dashboard is open (queue depth,
// DLQ depth, outbox backlog): the services expose these as current gauges
// only. Kept at module level so leaving the Overview does not lose them.
const series = new Map<string, Ref<Point[]>>()

export const HISTORY_WINDOW_MS = 60 * 60 * 1000

/** Appends v at time t to a series, dropping points older than the window. */
export function appendSample(points: Point[], t: number, v: number, windowMs = HISTORY_WINDOW_MS): Point[] {
  const cutoff = t - windowMs
  const kept = points.filter((p) => p.t >= cutoff)
  const last = kept[kept.length - 1]
  if (last && last.t === t) kept[kept.length - 1] = { t, v }
  else kept.push({ t, v })
  return kept
}

export function useSampleHistory(name: string) {
  let s = series.get(name)
  if (!s) {
    s = ref<Point[]>([])
    series.set(name, s)
  }
  const points = s
  return {
    points,
    record(v: number | null | undefined, t = Date.now()) {
      if (v === null || v === undefined || !Number.isFinite(v)) return
      points.value = appendSample(points.value, t, v)
    },
  }
}
