// Elasticsearch aggregation results as tables an operator can read: bucket
// aggregations become rows (key, documents, and one column per metric
// sub-aggregation), a bucket sub-aggregation's buckets rows under their
// parent (a date_histogram → terms shows each day, then its terms), metric
// aggregations a value or a few statistics.

export interface AggTable {
  kind: 'buckets'
  columns: string[]
  rows: AggRow[]
}
/** One bucket; depth > 0 for the buckets of a bucket sub-aggregation, path naming the parents' keys. */
export interface AggRow {
  key: string
  docCount: number
  values: Record<string, string>
  depth: number
  path: string[]
}
export interface AggValues {
  kind: 'values'
  values: [string, string][]
}
export type AggView = AggTable | AggValues

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)

export function formatAggValue(v: unknown): string {
  if (v === null || v === undefined) return '—'
  if (typeof v === 'number') return Number.isInteger(v) ? v.toLocaleString('en-US') : v.toLocaleString('en-US', { maximumFractionDigits: 3 })
  return String(v)
}

/** A metric result's values: {value}, stats {count,min,max,avg,sum}, or a sub-bucket's doc_count. */
function metricValues(r: Record<string, unknown>): [string, string][] {
  if ('value' in r) return [['value', formatAggValue(r.value_as_string ?? r.value)]]
  const out: [string, string][] = []
  for (const k of ['count', 'min', 'max', 'avg', 'sum', 'doc_count']) if (k in r) out.push([k, formatAggValue(r[k])])
  return out
}

export function aggView(result: unknown): AggView {
  if (!isObject(result)) return { kind: 'values', values: [['value', formatAggValue(result)]] }
  if (result.buckets !== undefined) {
    const columns = new Set<string>()
    const rows = bucketRows(result.buckets, columns, [])
    return { kind: 'buckets', columns: [...columns], rows }
  }
  const values = metricValues(result)
  for (const [k, v] of Object.entries(result)) {
    if (isObject(v)) for (const [name, val] of metricValues(v)) values.push([name === 'value' ? k : `${k}.${name}`, val])
  }
  return { kind: 'values', values }
}

const BUCKET_FIELDS = ['key', 'key_as_string', 'doc_count', 'from', 'to', 'from_as_string', 'to_as_string']

/** A bucket aggregation's buckets as rows, each followed by the rows of its bucket sub-aggregations. */
function bucketRows(raw: unknown, columns: Set<string>, path: string[]): AggRow[] {
  const buckets: [string, Record<string, unknown>][] = Array.isArray(raw)
    ? raw.filter(isObject).map((b) => [String(b.key_as_string ?? b.key ?? ''), b])
    : isObject(raw) ? Object.entries(raw).filter((e): e is [string, Record<string, unknown>] => isObject(e[1])) : []
  const rows: AggRow[] = []
  for (const [key, b] of buckets) {
    const values: Record<string, string> = {}
    const children: AggRow[] = []
    for (const [k, v] of Object.entries(b)) {
      if (BUCKET_FIELDS.includes(k) || !isObject(v)) continue
      if (v.buckets !== undefined) {
        children.push(...bucketRows(v.buckets, columns, [...path, key]))
        continue
      }
      for (const [name, val] of metricValues(v)) {
        const col = name === 'value' ? k : `${k}.${name}`
        columns.add(col)
        values[col] = val
      }
    }
    rows.push({ key, docCount: Number(b.doc_count ?? 0), values, depth: path.length, path }, ...children)
  }
  return rows
}
