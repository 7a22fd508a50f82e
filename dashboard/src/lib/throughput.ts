// Throughput per source from Prometheus: documents classified, and sent to
// the outbox to publish (a first or changed classification), per minute
// over the Overview's range.

// The queries are the dashboard server's (dashboard/server/overview.go,
// overviewQueries): a source's counter series appears with its first
// documents already counted, so a series younger than the window counts
// whole (as deploy/prometheus/alerts.yml does).

export interface ThroughputRow {
  source: string
  classified: number
  published: number
}

type Vector = { metric: Record<string, string>; value: [number, string] }[]

/** One row per source with any throughput, busiest first. */
export function throughputRows(classified: Vector, published: Vector): ThroughputRow[] {
  const rows = new Map<string, ThroughputRow>()
  const add = (v: Vector, key: 'classified' | 'published') => {
    for (const s of v) {
      const n = Number(s.value[1])
      const source = s.metric.source ?? ''
      if (!Number.isFinite(n)) continue
      const row = rows.get(source) ?? { source, classified: 0, published: 0 }
      row[key] += n
      rows.set(source, row)
    }
  }
  add(classified, 'classified')
  add(published, 'published')
  return [...rows.values()]
    .filter((r) => r.classified > 0 || r.published > 0)
    .sort((a, b) => b.classified - a.classified || b.published - a.published || a.source.localeCompare(b.source))
}
