// The Query Explorer's input: plain text, a bare query, or Elasticsearch's
// own search body, checked against what the index-manager accepts (see
// index-manager/README.md, "Query allowlist") so that anything it would
// drop or refuse is named here instead.
import type { DocumentQueryRequest, SortField } from '@/types/indexManager'

/** Fields a plain-text query searches, title weighted up. */
export const TEXT_QUERY_FIELDS = ['title^2', 'raw_text', 'meta_description', 'url']

/**
 * The fields that carry a message's body, which the index-manager keeps
 * from viewers under VIEWER_MESSAGE_BODIES=hide (index-manager
 * internal/api/bodies.go BodyFields).
 */
export const BODY_FIELDS = ['raw_text', 'raw_html', 'body']

/** What the refusal of a body field says: the setting that hides them. */
export const BODIES_HIDDEN = 'message bodies are hidden from viewers by the index-manager setting VIEWER_MESSAGE_BODIES=hide'

/** Options of parseDocumentQuery. */
export interface QueryOptions {
  /**
   * Whether the signed-in user reads message bodies (GET /auth/me
   * reads_bodies). When false, a text search and its highlight leave the
   * body fields out, and a JSON query naming one is refused here as the
   * index-manager would refuse it (403).
   */
  readsBodies?: boolean
}

/** The text-search fields for a user who does or does not read bodies. */
export function textQueryFields(readsBodies = true): string[] {
  return readsBodies ? TEXT_QUERY_FIELDS : TEXT_QUERY_FIELDS.filter((f) => !isBodyField(f))
}

/**
 * Whether a field name (with an optional ^boost, a sub-field such as
 * raw_text.keyword, or a pattern such as raw_* or *) names or matches a
 * body field: the index-manager's isBodyField.
 */
export function isBodyField(name: string): boolean {
  const field = name.split('^')[0]!
  // Go's path.Match: * is any run of characters, ? one character.
  const pattern = new RegExp(`^${field.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`)
  return BODY_FIELDS.some((f) => field === f || field.startsWith(`${f}.`) || pattern.test(f))
}

/**
 * Why the index-manager would refuse parts of a query for a user who does
 * not read bodies, or '' (its bodyReference): a body field named as a key or
 * a string value, a query_string, or a multi_match / simple_query_string
 * without fields.
 */
export function bodyReference(...parts: unknown[]): string {
  const walk = (v: unknown): string => {
    if (Array.isArray(v)) {
      for (const sub of v) {
        const m = walk(sub)
        if (m) return m
      }
    } else if (isObject(v)) {
      for (const [k, sub] of Object.entries(v)) {
        if (isBodyField(k)) return `field ${k}`
        if (k === 'query_string') return 'query_string'
        if ((k === 'multi_match' || k === 'simple_query_string') && isObject(sub) && sub.fields === undefined) return `${k} without fields`
        const m = walk(sub)
        if (m) return m
      }
    } else if (typeof v === 'string' && isBodyField(v)) return `field ${v}`
    return ''
  }
  for (const p of parts) {
    const m = walk(p)
    if (m) return m
  }
  return ''
}

/** The index-manager's caps: hits per page, and from + size. */
export const MAX_SIZE = 100
export const MAX_WINDOW = 10_000

/** Top-level keys of a search body the index-manager runs. */
const BODY_KEYS = ['query', 'size', 'from', 'sort', '_source', 'highlight', 'search_after', 'aggs', 'aggregations', 'track_total_hits']

export type ParsedQuery =
  | { kind: 'text'; request: DocumentQueryRequest }
  | { kind: 'json'; request: DocumentQueryRequest }
  | { kind: 'error'; message: string }

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)

/**
 * Elasticsearch's sort forms to the index-manager's {field, order} list:
 * "field", {"field": "desc"}, {"field": {"order": "desc"}}, {"field", "order"},
 * one of them or a list.
 */
export function normalizeSort(sort: unknown): SortField[] | string {
  const list = Array.isArray(sort) ? sort : [sort]
  const out: SortField[] = []
  for (const item of list) {
    if (typeof item === 'string') {
      out.push({ field: item, order: item === '_score' ? 'desc' : 'asc' })
      continue
    }
    if (!isObject(item)) return 'each sort entry must be a field name or an object'
    if (typeof item.field === 'string' && Object.keys(item).every((k) => k === 'field' || k === 'order')) {
      const order = item.order ?? 'asc'
      if (order !== 'asc' && order !== 'desc') return `sort order must be asc or desc (got ${JSON.stringify(order)})`
      out.push({ field: item.field, order })
      continue
    }
    const keys = Object.keys(item)
    if (keys.length !== 1) return 'each sort object names one field: {"field": "desc"} or {"field": {"order": "desc"}}'
    const field = keys[0]!
    const spec = item[field]
    let order: unknown = 'asc'
    if (typeof spec === 'string') order = spec
    else if (isObject(spec)) {
      const extra = Object.keys(spec).filter((k) => k !== 'order')
      if (extra.length) return `sort option ${extra.map((k) => `"${k}"`).join(', ')} of ${field} is not supported by the index-manager (only order)`
      order = spec.order ?? 'asc'
    } else return `sort of ${field} must be "asc", "desc" or {"order": ...}`
    if (order !== 'asc' && order !== 'desc') return `sort order must be asc or desc (got ${JSON.stringify(order)})`
    out.push({ field, order })
  }
  if (out.length > 10) return 'at most 10 sort fields'
  return out
}

/**
 * Turns what the operator typed into a query request. Input that starts with
 * "{" is JSON: a search body when its keys are search-body keys (query,
 * size, from, sort, _source, highlight, search_after, aggs), otherwise a
 * bare query. Anything else is plain text and becomes a multi_match.
 * Malformed JSON and what the index-manager would refuse are errors with a
 * message that says why.
 */
export function parseDocumentQuery(input: string, size = 20, from = 0, opts: QueryOptions = {}): ParsedQuery {
  const parsed = parseQuery(input, size, from)
  if (parsed.kind === 'json' && opts.readsBodies === false) {
    const r = parsed.request
    const why = bodyReference(r.query, r.highlight, (r.sort ?? []).map((s) => s.field), r.aggs)
    if (why) return { kind: 'error', message: `${why}: ${BODIES_HIDDEN}` }
  }
  if (parsed.kind === 'text' && opts.readsBodies === false) {
    return {
      kind: 'text',
      request: { ...parsed.request, query: { multi_match: { query: input.trim(), fields: textQueryFields(false) } }, highlight: { fields: { title: {} } } },
    }
  }
  return parsed
}

function parseQuery(input: string, size: number, from: number): ParsedQuery {
  const text = input.trim()
  if (!text) return { kind: 'error', message: 'Type a search or a JSON query' }
  if (!text.startsWith('{')) {
    return {
      kind: 'text',
      request: {
        query: { multi_match: { query: text, fields: TEXT_QUERY_FIELDS } },
        size,
        from,
        highlight: { fields: { title: {}, raw_text: {} } },
      },
    }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (e) {
    return { kind: 'error', message: `Invalid JSON: ${e instanceof Error ? e.message : String(e)}` }
  }
  if (!isObject(parsed)) return { kind: 'error', message: 'A JSON query must be an object' }
  const keys = Object.keys(parsed)
  const isBody = keys.length > 0 && keys.some((k) => BODY_KEYS.includes(k))
  if (!isBody) return { kind: 'json', request: { query: parsed, size, from } }

  const unknown = keys.filter((k) => !BODY_KEYS.includes(k))
  if (unknown.length) {
    return { kind: 'error', message: `${unknown.map((k) => `"${k}"`).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not accepted by the index-manager; a search body may hold ${BODY_KEYS.filter((k) => k !== 'aggregations').join(', ')}` }
  }
  const body = parsed
  const req: DocumentQueryRequest = { query: {}, size, from }
  if (body.query !== undefined) {
    if (!isObject(body.query)) return { kind: 'error', message: 'query must be an object' }
    req.query = body.query
  }
  if (body.size !== undefined) {
    if (!Number.isInteger(body.size) || (body.size as number) < 0) return { kind: 'error', message: 'size must be a whole number' }
    if ((body.size as number) > MAX_SIZE) return { kind: 'error', message: `size is at most ${MAX_SIZE} per page; the pager goes further` }
    req.size = body.size as number
  }
  if (body.from !== undefined) {
    if (!Number.isInteger(body.from) || (body.from as number) < 0) return { kind: 'error', message: 'from must be a whole number' }
    req.from = body.from as number
  }
  if ((req.from ?? 0) + (req.size ?? 0) > MAX_WINDOW) {
    return { kind: 'error', message: `from + size is at most ${MAX_WINDOW.toLocaleString('en-US')}; add a sort and use search_after (the Next button does) to go deeper` }
  }
  if (body.sort !== undefined) {
    const sort = normalizeSort(body.sort)
    if (typeof sort === 'string') return { kind: 'error', message: sort }
    req.sort = sort
  }
  if (body._source !== undefined) {
    const src = body._source
    if (typeof src === 'string') req._source = [src]
    else if (Array.isArray(src) && src.every((s) => typeof s === 'string')) req._source = src as string[]
    else if (isObject(src) && Array.isArray(src.includes) && Object.keys(src).every((k) => k === 'includes')) req._source = src.includes as string[]
    else return { kind: 'error', message: '_source must be a field name, a list of field names or patterns, or {"includes": [...]}; excludes and false are not supported' }
  }
  if (body.highlight !== undefined) {
    if (!isObject(body.highlight)) return { kind: 'error', message: 'highlight must be an object' }
    req.highlight = body.highlight
  }
  if (body.aggs !== undefined && body.aggregations !== undefined) return { kind: 'error', message: 'give aggs or aggregations, not both' }
  const aggs = body.aggs ?? body.aggregations
  if (aggs !== undefined) {
    if (!isObject(aggs)) return { kind: 'error', message: 'aggs must be an object' }
    req.aggs = aggs
  }
  if (body.search_after !== undefined) {
    if (!Array.isArray(body.search_after)) return { kind: 'error', message: 'search_after must be a list of sort values' }
    if (!req.sort?.length) return { kind: 'error', message: 'search_after needs a sort' }
    req.search_after = body.search_after
    req.from = 0
  }
  // track_total_hits: totals are always exact here.
  return { kind: 'json', request: req }
}

/**
 * The request of a page after another: sorted (by the operator's sort, or
 * by score), with the unique id as the last sort key so the order is total,
 * continued with search_after from the previous page's last hit.
 */
export function pagedRequest(req: DocumentQueryRequest, after: unknown[] | undefined): DocumentQueryRequest {
  const sort = req.sort?.length ? [...req.sort] : [{ field: '_score', order: 'desc' as const }]
  if (!sort.some((s) => s.field === 'id')) sort.push({ field: 'id', order: 'asc' })
  const out: DocumentQueryRequest = { ...req, sort }
  if (after) {
    out.search_after = after
    out.from = 0
  } else delete out.search_after
  return out
}

/** Highlight fragments as text and marked parts (ES wraps matches in <em>…</em>). */
export function highlightParts(fragment: string): { text: string; mark: boolean }[] {
  const out: { text: string; mark: boolean }[] = []
  const re = /<em>(.*?)<\/em>/gs
  let last = 0
  for (const m of fragment.matchAll(re)) {
    if (m.index! > last) out.push({ text: fragment.slice(last, m.index), mark: false })
    out.push({ text: m[1]!, mark: true })
    last = m.index! + m[0].length
  }
  if (last < fragment.length) out.push({ text: fragment.slice(last), mark: false })
  return out
}

/**
 * A hit's sort values as text: Elasticsearch gives a date field's sort value
 * as epoch milliseconds, shown here as the date (ISO 8601) when the hit's
 * own field holds a date; other values as JSON.
 */
export function sortValuesText(values: unknown[], sort: SortField[], source: Record<string, unknown>): string {
  return values.map((v, i) => {
    const field = sort[i]?.field
    const own = field ? source[field] : undefined
    if (typeof v === 'number' && typeof own === 'string' && /^\d{4}-\d{2}-\d{2}/.test(own) && Number.isFinite(Date.parse(own))) {
      return new Date(v).toISOString()
    }
    return JSON.stringify(v)
  }).join(', ')
}
