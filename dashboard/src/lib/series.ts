// Time series on a continuous axis: every bucket of the window is present,
// empty ones as zeros, up to the bucket holding "now".

export interface Point {
  t: number
  v: number
}

/** The start of the bucket holding t. */
export function bucketStart(t: number, stepMs: number): number {
  return Math.floor(t / stepMs) * stepMs
}

/**
 * Every bucket from now-window to now, stepMs apart, with the value of the
 * matching point or 0. Points outside the window are dropped; points not on
 * a bucket boundary are added to their bucket.
 */
export function fillBuckets(points: Point[], stepMs: number, windowMs: number, now: number): Point[] {
  const last = bucketStart(now, stepMs)
  const first = last - Math.floor(windowMs / stepMs) * stepMs + stepMs
  const byT = new Map<number, number>()
  for (const p of points) {
    const b = bucketStart(p.t, stepMs)
    if (b < first || b > last) continue
    byT.set(b, (byT.get(b) ?? 0) + p.v)
  }
  const out: Point[] = []
  for (let t = first; t <= last; t += stepMs) out.push({ t, v: byT.get(t) ?? 0 })
  return out
}

/** The value of the last complete bucket (the one before "now"'s), 0 when empty. */
export function lastCompleteBucket(filled: Point[]): number {
  return filled.length >= 2 ? filled[filled.length - 2]!.v : 0
}
