import { describe, expect, it } from 'vitest'
import { findDocument, type FindDeps } from '@/lib/findDocument'
import type { DeadLetterEntry } from '@/types/classifier'
import type { OutboxEntry } from '@/types/publisher'

// The stores as the find box sees them through the APIs: which index holds
// which id, the outbox rows and the dead letters.
function deps(held: Record<string, string[]>, outbox: Partial<OutboxEntry>[] = [], dlq: Partial<DeadLetterEntry>[] = []): FindDeps & { asked: string[] } {
  const asked: string[] = []
  return {
    asked,
    outbox: async () => outbox as OutboxEntry[],
    deadLetters: async () => dlq as DeadLetterEntry[],
    rawIndices: async () => Object.keys(held).filter((n) => n.endsWith('_raw_content')),
    holds: async (index, id) => { asked.push(index); return (held[index] ?? []).includes(id) },
  }
}

describe('find a document by id', () => {
  it('lists every place, with the indices the outbox names, without searching every raw index', async () => {
    const d = deps({ a_raw_content: ['x'], a_classified_content: ['x'], b_raw_content: [] },
      [{ index: 'a_classified_content', status: 'published', channel: 'articles:news' }],
      [{ id: 'e1', index_name: 'a_raw_content', error_code: 'TIMEOUT', exhausted: true }])
    const r = await findDocument('x', d)
    expect(r.failures).toEqual([])
    expect(r.places.map((p) => [p.kind, p.index, p.to])).toEqual([
      ['raw', 'a_raw_content', '/documents/a_raw_content/x'],
      ['classified', 'a_classified_content', `/indices?tab=query&qi=a_classified_content&qt=${encodeURIComponent('{"ids":{"values":["x"]}}')}`],
      ['outbox', 'a_classified_content', '/outbox?content_id=x'],
      ['dlq', 'a_raw_content', '/dlq?content_id=x&open=e1'],
    ])
    expect(d.asked).not.toContain('b_raw_content')
  })

  it('searches the raw indices when neither the outbox nor the queue knows the id, and names a service that fails', async () => {
    const d = deps({ a_raw_content: [], b_raw_content: ['y'] })
    d.outbox = async () => { throw new Error('publisher unavailable (502)') }
    const r = await findDocument('y', d)
    expect(r.places.map((p) => [p.kind, p.index])).toEqual([['raw', 'b_raw_content']])
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
