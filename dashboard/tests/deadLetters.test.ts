import { describe, expect, it } from 'vitest'
import { countFromStats, countMatching, deadLetterFilter, NO_SOURCE, outcomeText, retryOutcome } from '@/lib/deadLetters'
import { createClassifierApi } from '@/api/classifier'
import { createHttpClient } from '@/api/http'
import { vi } from 'vitest'
import type { DeadLetterEntry } from '@/types/classifier'
import { deadLettersLink } from '@/lib/sources'

const entry = (over: Partial<DeadLetterEntry> = {}): DeadLetterEntry => ({
  id: 'e', content_id: 'c', source_name: 's', index_name: 's_raw_content', error_message: 'bad', error_code: 'VALIDATION_ERROR',
  retry_count: 0, max_retries: 1, next_retry_at: null, created_at: '2026-01-01T00:00:00Z', last_attempt_at: '2026-01-01T00:00:00Z', exhausted: false, ...over,
})

describe('the outcome of a dead-letter retry', () => {
  it('waits for an attempt after the request, then says what it gave', () => {
    const before = entry()
    expect(retryOutcome(before, entry({ next_retry_at: '2026-01-01T00:01:00Z' }))).toEqual({ state: 'waiting' })
    expect(retryOutcome(before, undefined)).toEqual({ state: 'succeeded' })
    const failed = retryOutcome(before, entry({ last_attempt_at: '2026-01-01T00:02:00Z', retry_count: 1, exhausted: true }))
    expect(outcomeText(failed)).toBe('retry failed again with VALIDATION_ERROR (1 / 1), exhausted')
    const permanent = retryOutcome(before, entry({ last_attempt_at: '2026-01-01T00:02:00Z', permanent: true, permanent_reason: 'failed 3 times in a row with X' }))
    expect(outcomeText(permanent)).toMatch(/permanent: failed 3 times in a row with X$/)
  })

  it('counts the entries a filter matches page by page', async () => {
    const pages = [{ entries: [entry(), entry()], next_cursor: 'p2' }, { entries: [entry()], next_cursor: null }]
    const seen: (string | undefined)[] = []
    const r = await countMatching({ source: 's', error_code: 'X' }, async (p) => { seen.push(p.cursor); return pages[seen.length - 1]! })
    expect(r).toEqual({ count: 3, more: false })
    expect(seen).toEqual([undefined, 'p2'])
  })
})

describe('exports', () => {
  it('writes CSV with a header of every key, quoting what needs it and JSON in a cell for objects', async () => {
    const { toCSV } = await import('@/lib/exportData')
    expect(toCSV([{ id: 'a', title: 'Say "hi", then go', topics: ['x', 'y'] }, { id: 'b', extra: null }])).toBe(
      'id,title,topics,extra\r\na,"Say ""hi"", then go","[""x"",""y""]",\r\nb,,,\r\n',
    )
  })
  it('collects every page of a list, up to its bound', async () => {
    const { collectPages } = await import('@/lib/exportData')
    const page = async (cursor: string | undefined) => (cursor ? { entries: [3], next_cursor: null } : { entries: [1, 2], next_cursor: 'c' })
    expect(await collectPages(page)).toEqual({ entries: [1, 2, 3], more: false })
    expect(await collectPages(page, 2)).toEqual({ entries: [1, 2], more: true })
  })
})

// The classifier takes an empty source as "any": entries recorded without a
// source name are selected by no_source, and deleted by filter through
// POST /dlq/delete with the count named in the confirmation.
describe('entries without a source name, and delete by filter', () => {
  it('the (no source) choice is the no_source flag, never an empty source', () => {
    expect(deadLetterFilter(NO_SOURCE, '', '')).toEqual({ source: undefined, no_source: true, error_code: undefined, exhausted: undefined })
    expect(deadLetterFilter('metro', 'RULE_PANIC', 'true')).toEqual({ source: 'metro', no_source: undefined, error_code: 'RULE_PANIC', exhausted: true })
    expect(deadLetterFilter('', '', '')).toEqual({ source: undefined, no_source: undefined, error_code: undefined, exhausted: undefined })
  })

  it('counts the nameless entries from the queue figures', () => {
    const stats = { pending: 3, exhausted: 2, permanent: 0, ready: 0, avg_retries: 0, oldest_entry: null, by_source: { metro: 3, '': 2 }, by_error_code: { X: 5 } }
    expect(countFromStats(stats, deadLetterFilter(NO_SOURCE, '', ''))).toBe(2)
    expect(countFromStats(stats, deadLetterFilter('metro', '', ''))).toBe(3)
    expect(countFromStats(stats, deadLetterFilter('', '', ''))).toBe(5)
    expect(countFromStats(stats, deadLetterFilter(NO_SOURCE, 'X', ''))).toBeNull()
  })

  it('lists with no_source=true and deletes by filter (an empty filter as all)', async () => {
    const f = vi.fn(async (_u: RequestInfo | URL, _i?: RequestInit) => new Response('{"entries":[],"next_cursor":null,"deleted":2}', { status: 200, headers: { 'Content-Type': 'application/json' } }))
    const api = createClassifierApi(createHttpClient({ baseUrl: '/c', fetch: f as unknown as typeof fetch, getToken: () => 't' }))
    await api.listDeadLetters(deadLetterFilter(NO_SOURCE, '', ''))
    await api.deleteDeadLetters(deadLetterFilter(NO_SOURCE, 'RULE_PANIC', ''))
    await api.deleteDeadLetters({})
    expect(f.mock.calls.map(([u, i]) => `${i?.method} ${String(u)}${i?.body ? ` ${String(i.body)}` : ''}`)).toEqual([
      'GET /c/api/v1/dlq?no_source=true',
      'POST /c/api/v1/dlq/delete {"no_source":true,"error_code":"RULE_PANIC"}',
      'POST /c/api/v1/dlq/delete {"all":true}',
    ])
  })
})

// A source's dead-letter count (Sources) is made by its raw index, nameless
// entries included: its link filters by index, which the list and the
// bulk actions both take.
describe('a source’s dead letters, by raw index', () => {
  it('links the count to the DLQ view filtered by the raw index, not the source name', () => {
    expect(deadLettersLink({ raw_index: 'metro_raw_content' })).toEqual({ name: 'dlq', query: { index: 'metro_raw_content' } })
    expect(deadLettersLink({ raw_index: 'metro_raw_content' }, 'VALIDATION_ERROR')).toEqual({ name: 'dlq', query: { index: 'metro_raw_content', code: 'VALIDATION_ERROR' } })
  })

  it('lists and acts on the index filter, counted page by page (the queue figures are by source name)', async () => {
    const stats = { pending: 3, exhausted: 2, permanent: 0, ready: 0, avg_retries: 0, oldest_entry: null, by_source: { metro: 3, '': 2 }, by_error_code: { X: 5 } }
    const f = deadLetterFilter('', '', '', ' metro_raw_content ')
    expect(f.index).toBe('metro_raw_content')
    expect(countFromStats(stats, f)).toBeNull()
    expect(deadLetterFilter('', '', '', '')).not.toHaveProperty('index')
    const fetchFn = vi.fn(async (_u: RequestInfo | URL, _i?: RequestInit) => new Response('{"entries":[],"next_cursor":null,"deleted":2,"requeued":2}', { status: 200, headers: { 'Content-Type': 'application/json' } }))
    const api = createClassifierApi(createHttpClient({ baseUrl: '/c', fetch: fetchFn as unknown as typeof fetch, getToken: () => 't' }))
    await api.listDeadLetters(f)
    await api.requeueDeadLetters(f)
    await api.deleteDeadLetters(f)
    expect(fetchFn.mock.calls.map(([u, i]) => `${i?.method} ${String(u)}${i?.body ? ` ${String(i.body)}` : ''}`)).toEqual([
      'GET /c/api/v1/dlq?index=metro_raw_content',
      'POST /c/api/v1/dlq/requeue {"index":"metro_raw_content"}',
      'POST /c/api/v1/dlq/delete {"index":"metro_raw_content"}',
    ])
  })
})

describe('permanent dead letters', () => {
  it('offers no retry on an entry the classifier marks not retryable, and says why', async () => {
    const { retryRefusal } = await import('@/lib/deadLetters')
    expect(retryRefusal({ error_code: 'VALIDATION_ERROR', retryable: false, retry_refusal: 'VALIDATION_ERROR is permanent: the document was refused as it is' }))
      .toBe('VALIDATION_ERROR is permanent: the document was refused as it is')
    expect(retryRefusal({ error_code: 'NOT_FOUND', retryable: false, retry_refusal: null })).toBe('NOT_FOUND is permanent: a retry cannot succeed')
    expect(retryRefusal({ error_code: 'ES_TIMEOUT', retryable: true, retry_refusal: null })).toBeNull()
    expect(retryRefusal({ error_code: 'ES_TIMEOUT' })).toBeNull()
  })
  it('says how many a bulk retry skipped as permanent, by code', async () => {
    const { bulkRequeueText } = await import('@/lib/deadLetters')
    expect(bulkRequeueText({ requeued: 3, skipped: 0, skipped_by_code: {} })).toBe('Re-queued 3 entries matching the filter')
    expect(bulkRequeueText({ requeued: 1, skipped: 2, skipped_by_code: { VALIDATION_ERROR: 1, NOT_FOUND: 1 } }))
      .toBe('Re-queued 1 entry matching the filter; skipped 2 entries whose error is permanent (NOT_FOUND 1, VALIDATION_ERROR 1): a retry cannot succeed')
  })
})
