// Throughput per source from Prometheus: documents classified, and sent to
// the outbox to publish (a first or changed classification), per minute
// over the last THROUGHPUT_WINDOW.
export const THROUGHPUT_WINDOW = '15m'

// A source's counter series appears with its first documents already
// counted, which rate() and increase() do not see; a series younger than
// the window counts whole (as deploy/prometheus/alerts.yml does).
// (dashboard/server's tests send these through its Prometheus proxy.)
export const THROUGHPUT_QUERIES = {
  classified: 'sum by (source) ((classifier_documents_processed_total unless classifier_documents_processed_total offset 15m) or increase(classifier_documents_processed_total[15m])) / 15',
  published: 'sum by (source) ((classifier_publications_total{decision=~"first|changed"} unless classifier_publications_total offset 15m) or increase(classifier_publications_total{decision=~"first|changed"}[15m])) / 15',
} as const

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
