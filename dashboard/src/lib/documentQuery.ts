import type { DocumentQueryRequest } from '@/types/indexManager'

/** Fields a plain-text query searches, title weighted up (spec 5.1). */
export const TEXT_QUERY_FIELDS = ['title^2', 'raw_text', 'meta_description', 'url']

export type ParsedQuery =
  | { kind: 'text'; request: DocumentQueryRequest }
  | { kind: 'json'; request: DocumentQueryRequest }
  | { kind: 'error'; message: string }

/**
 * Turns what the operator typed into a query request. Input that starts with
 * "{" is query DSL: either a bare query ({"match": ...}) or a full request
 * body ({"query": ..., "size": ...}); anything else is plain text and
 * becomes a multi_match. Malformed JSON is an error, not a text search for
 * braces.
 */
export function parseDocumentQuery(input: string, size = 20, from = 0): ParsedQuery {
  const text = input.trim()
  if (!text) return { kind: 'error', message: 'Type a search or a JSON query' }
  if (text.startsWith('{')) {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (e) {
      return { kind: 'error', message: `Invalid JSON: ${e instanceof Error ? e.message : String(e)}` }
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return { kind: 'error', message: 'A JSON query must be an object' }
    }
    const obj = parsed as Record<string, unknown>
    if ('query' in obj && obj.query && typeof obj.query === 'object') {
      const req: DocumentQueryRequest = { query: obj.query as Record<string, unknown>, size, from }
      if (typeof obj.size === 'number') req.size = obj.size
      if (Array.isArray(obj.sort)) req.sort = obj.sort as DocumentQueryRequest['sort']
      if (Array.isArray(obj._source)) req._source = obj._source as string[]
      if (obj.highlight && typeof obj.highlight === 'object') req.highlight = obj.highlight as Record<string, unknown>
      return { kind: 'json', request: req }
    }
    return { kind: 'json', request: { query: obj, size, from } }
  }
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
