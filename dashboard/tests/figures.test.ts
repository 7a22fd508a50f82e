import { describe, expect, it } from 'vitest'
import { buildSourceRows, refusalReasons, reprocessRefusal, reprocessSummary, reputationTone, sortRows, sourceOfIndex } from '@/lib/sources'
import { fillBuckets, lastCompleteBucket } from '@/lib/series'
import type { IndexSummary } from '@/types/indexManager'
import type { SourceReputation, SourceStats } from '@/types/classifier'

const idx = (name: string, doc_count: number) => ({ name, doc_count }) as IndexSummary
const rep = (source_name: string, total: number, score: number): SourceReputation => ({
  source_name, total_documents: total, classified_documents: total, failed_documents: 0, crime_documents: 0,
  average_quality: 60, reputation_score: score, first_seen_at: null, last_seen_at: null,
})

describe('sources', () => {
  it('names the source of a content index', () => {
    expect(sourceOfIndex('reuters_raw_content')).toEqual({ source: 'reuters', type: 'raw' })
    expect(sourceOfIndex('a_b_classified_content')).toEqual({ source: 'a_b', type: 'classified' })
    expect(sourceOfIndex('_raw_content')).toBeNull()
    expect(sourceOfIndex('logs')).toBeNull()
  })
  it('counts documents from the indices, attempts from the reputation, and drops a nameless source', () => {
    const rows = buildSourceRows(
      [idx('reuters_raw_content', 70_007), idx('reuters_classified_content', 70_003), idx('other', 5)],
      [rep('reuters', 134_219, 0.83), rep('', 12, 0.5), rep('gone', 3, 1.7)],
      { reuters: { failed: 5, crime: 10 } },
    )
    expect(rows.map((r) => r.source)).toEqual(['gone', 'reuters'])
    const r = rows[1]!
    expect([r.documents, r.classified, r.failed, r.crime, r.attempts]).toEqual([70_007, 70_003, 5, 10, 134_219])
    expect(r.reputation).toBe(0.83)
    expect(rows[0]!.documents).toBeNull()
    expect(rows[0]!.reputation).toBe(1)
  })
  it('takes the classifier\'s figures from /sources/stats, absent kinds and statuses as 0', () => {
    const st: SourceStats = {
      source: 'reuters', raw_index: 'reuters_raw_content', processed: 70_004, by_status: { pending: 2, processing: 1, classified: 70_000, failed: 4 },
      rejected_at_door: { total: 5, by_field: { url: 4, raw_text: 1 } }, duplicates: { url: 2 }, published: 69_990, dead_letters: 9,
      dlq_rate: 9 / 70_004, oldest_pending_crawled_at: '2024-01-01T00:00:00Z', oldest_pending_age_seconds: 125,
    }
    const [r] = buildSourceRows([idx('reuters_raw_content', 70_007), idx('reuters_classified_content', 70_003)], [], { reuters: { failed: 1, crime: 10 } }, [st])
    expect(r).toMatchObject({
      classified: 70_004, failed: 4, crime: 10, pending: 3, rejected: 5, duplicatesUrl: 2, duplicatesContent: 0,
      published: 69_990, deadLetters: 9, dlqRate: 9 / 70_004, oldestPendingAge: 125,
    })
    // A source the index list does not know yet still gets its row.
    const only = buildSourceRows([], [], {}, [{ ...st, source: 'new', raw_index: 'new_raw_content', by_status: {} }])
    expect(only.map((x) => [x.source, x.rawIndex, x.pending])).toEqual([['new', 'new_raw_content', 0]])
    expect(refusalReasons(st)).toEqual([{ field: 'url', count: 4 }, { field: 'raw_text', count: 1 }])
    expect(refusalReasons(undefined)).toEqual([])
  })
  it('says why a reprocess was refused, keeping the service\'s message', () => {
    expect(reprocessRefusal(409, 'a reprocess of this source is already running: task t-1')).toBe('Refused, one is running already: a reprocess of this source is already running: task t-1')
    expect(reprocessRefusal(429, 'busy')).toMatch(/^This classifier runs as many reprocess tasks as it may; try again in a minute/)
    expect(reprocessRefusal(404, 'source x has no raw index x_raw_content')).toBe('Nothing to reprocess: source x has no raw index x_raw_content')
    expect(reprocessRefusal(503, 'down')).toBe('The classifier refused the reprocess (503): down')
  })
  it('sums up a reprocess task against the documents it was expected to touch', () => {
    const t = { status: 'running' as const, requeued: 1200, conflicts: 0, errors: 0, error: null }
    expect(reprocessSummary(t, 2000)).toBe('Setting documents back to pending: 1,200 of about 2,000')
    expect(reprocessSummary(t, 1000)).toBe('Setting documents back to pending: 1,200 so far')
    expect(reprocessSummary({ ...t, status: 'completed', requeued: 1 }, null)).toBe('1 document set back to pending; classified again at low priority')
    expect(reprocessSummary({ ...t, status: 'completed', conflicts: 2 }, 2000)).toBe('1,200 documents set back to pending (2 changed meanwhile, 0 refused by Elasticsearch); classified again at low priority')
    expect(reprocessSummary({ ...t, status: 'failed', error: 'index closed' }, null)).toBe('Reprocess failed after 1,200 documents: index closed')
    expect(reprocessSummary({ ...t, status: 'abandoned' }, null)).toMatch(/start it again to finish$/)
    expect(reprocessSummary({ ...t, status: 'cancelled' }, null)).toBe('Reprocess cancelled after 1,200 documents set back to pending (they are classified again); start it again to finish')
  })
  it('follows a reprocess to its end: its documents pending, then classified again', async () => {
    const { reprocessPhase } = await import('@/lib/sources')
    const done = { status: 'completed' as const, requeued: 2000, conflicts: 0, errors: 0, error: null }
    expect(reprocessSummary(done, 2000, 740)).toBe('2,000 documents set back to pending; being classified again at low priority: 740 still pending')
    expect(reprocessSummary(done, 2000, 0)).toBe('2,000 documents set back to pending and classified again')
    expect([reprocessPhase('running', 5), reprocessPhase('completed', 5), reprocessPhase('completed', 0), reprocessPhase('failed', 0)]).toEqual(['requeueing', 'classifying', 'done', 'stopped'])
  })
  it('lists a reprocess run\'s figures, what its documents became included; refusals only when there were some', async () => {
    const { reprocessRunFigures, reprocessTone } = await import('@/lib/sources')
    const run = { scanned: 2000, requeued: 1990, conflicts: 10, errors: 0, reclassified: 1990, topics_changed: 37 }
    expect(reprocessRunFigures(run).map((f) => [f.key, f.value])).toEqual([
      ['scanned', 2000], ['requeued', 1990], ['conflicts', 10], ['reclassified', 1990], ['topics_changed', 37]])
    expect(reprocessRunFigures({ ...run, errors: 3 }).find((f) => f.key === 'errors')).toEqual({ key: 'errors', label: 'Refused', value: 3 })
    expect([reprocessTone('completed'), reprocessTone('running'), reprocessTone('cancelled'), reprocessTone('failed'), reprocessTone('abandoned')])
      .toEqual(['success', 'info', 'warning', 'danger', 'danger'])
  })
  it('tones the reputation on its 0..1 scale', () => {
    expect([reputationTone(0.9), reputationTone(0.5), reputationTone(0.1)]).toEqual(['success', 'warning', 'danger'])
  })
  it('sorts with nulls last either way', () => {
    const rows = [{ n: 'a', v: 2 }, { n: 'b', v: null }, { n: 'c', v: 5 }]
    expect(sortRows(rows, 'v', 'desc').map((r) => r.n)).toEqual(['c', 'a', 'b'])
    expect(sortRows(rows, 'v', 'asc').map((r) => r.n)).toEqual(['a', 'c', 'b'])
  })
})

describe('series', () => {
  it('fills empty minutes with zeros up to now', () => {
    const m = 60_000
    const now = 10 * m + 30_000
    const filled = fillBuckets([{ t: 2 * m, v: 4 }, { t: 6 * m, v: 1 }, { t: -50 * m, v: 9 }], m, 10 * m, now)
    expect(filled).toHaveLength(10)
    expect(filled[0]!.t).toBe(1 * m)
    expect(filled[filled.length - 1]!.t).toBe(10 * m)
    expect(filled.map((p) => p.v)).toEqual([0, 4, 0, 0, 0, 1, 0, 0, 0, 0])
    expect(lastCompleteBucket(filled)).toBe(0)
    expect(lastCompleteBucket(fillBuckets([{ t: 9 * m, v: 7 }], m, 10 * m, now))).toBe(7)
  })
})
