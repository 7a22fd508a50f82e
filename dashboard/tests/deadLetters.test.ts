import { describe, expect, it } from 'vitest'
import { countMatching, outcomeText, retryOutcome } from '@/lib/deadLetters'
import type { DeadLetterEntry } from '@/types/classifier'

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
