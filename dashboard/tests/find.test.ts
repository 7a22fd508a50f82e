import { describe, expect, it } from 'vitest'
import { placesOf } from '@/lib/findDocument'
import type { FindAnswer } from '@/api/dashboard'
import type { DeadLetterEntry } from '@/types/classifier'
import type { OutboxEntry } from '@/types/publisher'

// The dashboard server's answer (GET /api/find) as the find box shows it.
const answer = (a: Partial<FindAnswer>): FindAnswer => ({ id: 'x', outbox: [], dead_letters: [], indices: [], failures: [], ...a })

describe('find a document by id', () => {
  it('lists every place with its link: indices, outbox rows, dead letters', () => {
    const r = placesOf(answer({
      indices: [{ index: 'a_raw_content', kind: 'raw' }, { index: 'a_classified_content', kind: 'classified' }],
      outbox: [{ index: 'a_classified_content', status: 'published', channel: 'articles:news' } as OutboxEntry],
      dead_letters: [{ id: 'e1', index_name: 'a_raw_content', error_code: 'TIMEOUT', exhausted: true } as DeadLetterEntry],
    }))
    expect(r.failures).toEqual([])
    expect(r.places.map((p) => [p.kind, p.index, p.to, p.detail])).toEqual([
      ['raw', 'a_raw_content', '/documents/a_raw_content/x', 'raw document'],
      ['classified', 'a_classified_content', `/indices?tab=query&qi=a_classified_content&qt=${encodeURIComponent('{"ids":{"values":["x"]}}')}`, 'classified'],
      ['outbox', 'a_classified_content', '/outbox?content_id=x', 'published on articles:news'],
      ['dlq', 'a_raw_content', '/dlq?content_id=x&open=e1', 'TIMEOUT, exhausted'],
    ])
  })

  it('names the services that failed beside the places the others hold, and escapes the id in links', () => {
    const r = placesOf(answer({ id: 'a/b c', indices: [{ index: 'b_raw_content', kind: 'raw' }], failures: [{ service: 'publisher', message: 'publisher unavailable (502)' }] }))
    expect(r.places.map((p) => [p.kind, p.to])).toEqual([['raw', '/documents/b_raw_content/a%2Fb%20c']])
    expect(r.failures).toEqual([{ service: 'publisher', message: 'publisher unavailable (502)' }])
  })
})

// Seed 004's fields, shown on the document page and the dead letters.
describe('hygieneFields', () => {
  it('lists the queue-hygiene fields a document carries, in reading order', async () => {
    const { hygieneFields } = await import('@/lib/documents')
    expect(hygieneFields({ is_processable: true, processing_strategy: 'metadata_only', url_class: 'social_media', title: 'x' })).toEqual([
      { key: 'url_class', label: 'URL class', value: 'social_media' },
      { key: 'processing_strategy', label: 'processing strategy', value: 'metadata_only' },
      { key: 'is_processable', label: 'processable', value: 'yes' },
    ])
    expect(hygieneFields({ processing_strategy: 'refuse', is_processable: false, failure_reason: 'unsupported extension .pdf' }).map((f) => f.value)).toEqual(['refuse', 'no', 'unsupported extension .pdf'])
    expect(hygieneFields({ title: 'x', failure_reason: '' })).toEqual([])
  })
})
