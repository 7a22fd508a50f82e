import { describe, expect, it } from 'vitest'
import { mount } from '@vue/test-utils'
import { bodyReference, isBodyField, parseDocumentQuery, TEXT_QUERY_FIELDS } from '@/lib/documentQuery'
import DocumentFields from '@/components/documents/DocumentFields.vue'

// VIEWER_MESSAGE_BODIES=hide: the index-manager answers 403 to a viewer's
// query naming raw_text, raw_html or body (internal/api/bodies.go), so the
// Query Explorer must not name them when /auth/me says reads_bodies false.
describe('reads_bodies', () => {
  it('a text search by a user who reads bodies searches and highlights the body', () => {
    const q = parseDocumentQuery('armed robbery')
    expect(q.kind === 'text' && q.request.query).toEqual({ multi_match: { query: 'armed robbery', fields: TEXT_QUERY_FIELDS } })
    expect(JSON.stringify(q)).toContain('raw_text')
  })

  it('a text search by a user who does not read bodies names no body field, in the query or the highlight', () => {
    const q = parseDocumentQuery('armed robbery', 20, 0, { readsBodies: false })
    expect(q.kind).toBe('text')
    if (q.kind !== 'text') return
    expect(q.request.query).toEqual({ multi_match: { query: 'armed robbery', fields: ['title^2', 'meta_description', 'url'] } })
    expect(q.request.highlight).toEqual({ fields: { title: {} } })
    expect(bodyReference(q.request.query, q.request.highlight)).toBe('')
    expect(JSON.stringify(q)).not.toMatch(/raw_text|raw_html|"body"/)
  })

  it('a JSON query naming a body field is refused with the setting named, as the index-manager would', () => {
    const hidden = { readsBodies: false }
    expect(parseDocumentQuery('{"match":{"raw_text":"gun"}}', 20, 0, hidden)).toMatchObject({ kind: 'error', message: expect.stringMatching(/field raw_text: .*VIEWER_MESSAGE_BODIES=hide/) })
    expect(parseDocumentQuery('{"query":{"match_all":{}},"highlight":{"fields":{"raw_*":{}}}}', 20, 0, hidden).kind).toBe('error')
    expect(parseDocumentQuery('{"query":{"match_all":{}},"sort":["body.keyword"]}', 20, 0, hidden).kind).toBe('error')
    expect(parseDocumentQuery('{"query_string":{"query":"raw_html:x"}}', 20, 0, hidden)).toMatchObject({ kind: 'error', message: expect.stringMatching(/^query_string/) })
    expect(parseDocumentQuery('{"multi_match":{"query":"x"}}', 20, 0, hidden)).toMatchObject({ kind: 'error', message: expect.stringMatching(/multi_match without fields/) })
    expect(parseDocumentQuery('{"match":{"title":"gun"}}', 20, 0, hidden).kind).toBe('json')
    // An operator's (or a viewer's under show) query runs as typed.
    expect(parseDocumentQuery('{"match":{"raw_text":"gun"}}', 20, 0, { readsBodies: true }).kind).toBe('json')
  })

  it('matches body fields as the index-manager does: names, sub-fields, boosts and patterns', () => {
    for (const f of ['raw_text', 'raw_html.keyword', 'body^3', 'raw_*', '*', 'bod?']) expect(isBodyField(f), f).toBe(true)
    for (const f of ['title', 'raw_textual', 'bodyguard', 'meta_description', 'url']) expect(isBodyField(f), f).toBe(false)
  })

  it('the document says its text is hidden by the setting when it comes without one', () => {
    const source = { title: 'A title', url: 'https://example.org/a' }
    const hidden = mount(DocumentFields, { props: { source, id: 'a', bodiesHidden: true }, global: { stubs: { RouterLink: true } } })
    expect(hidden.get('[data-testid="document-text-hidden"]').text()).toContain('VIEWER_MESSAGE_BODIES=hide')
    const shown = mount(DocumentFields, { props: { source, id: 'a' }, global: { stubs: { RouterLink: true } } })
    expect(shown.find('[data-testid="document-text-hidden"]').exists()).toBe(false)
  })
})
