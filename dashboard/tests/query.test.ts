import { describe, expect, it } from 'vitest'
import { highlightParts, normalizeSort, pagedRequest, parseDocumentQuery } from '@/lib/documentQuery'
import { aggView } from '@/lib/aggregations'

describe('search body', () => {
  it('takes sort in Elasticsearch forms', () => {
    expect(normalizeSort([{ quality_score: 'desc' }])).toEqual([{ field: 'quality_score', order: 'desc' }])
    expect(normalizeSort({ crawled_at: { order: 'asc' } })).toEqual([{ field: 'crawled_at', order: 'asc' }])
    expect(normalizeSort(['_score', 'title.keyword'])).toEqual([{ field: '_score', order: 'desc' }, { field: 'title.keyword', order: 'asc' }])
    expect(normalizeSort([{ field: 'x', order: 'desc' }])).toEqual([{ field: 'x', order: 'desc' }])
    expect(normalizeSort([{ x: { order: 'desc', missing: '_last' } }])).toMatch(/"missing" of x is not supported/)
    expect(normalizeSort([{ x: 'sideways' }])).toMatch(/asc or desc/)
  })
  it('keeps from, size, aggs, highlight and search_after, and names what it refuses', () => {
    const q = parseDocumentQuery('{"query":{"match_all":{}},"from":40,"size":5,"sort":[{"quality_score":"desc"}],"aggs":{"t":{"terms":{"field":"topics"}}},"highlight":{"fields":{"title":{}}}}')
    expect(q.kind === 'json' && q.request).toMatchObject({ from: 40, size: 5, sort: [{ field: 'quality_score', order: 'desc' }], aggs: { t: { terms: { field: 'topics' } } }, highlight: { fields: { title: {} } } })
    const aggsOnly = parseDocumentQuery('{"size":0,"aggregations":{"t":{"terms":{"field":"topics"}}}}')
    expect(aggsOnly.kind === 'json' && aggsOnly.request).toMatchObject({ size: 0, query: {}, aggs: { t: {} } })
    expect(parseDocumentQuery('{"query":{},"script_fields":{}}')).toMatchObject({ kind: 'error', message: expect.stringMatching(/"script_fields" is not accepted/) })
    expect(parseDocumentQuery('{"size":500}')).toMatchObject({ kind: 'error', message: expect.stringMatching(/at most 100/) })
    expect(parseDocumentQuery('{"from":9995,"size":10}')).toMatchObject({ kind: 'error', message: expect.stringMatching(/search_after/) })
    expect(parseDocumentQuery('{"search_after":[1]}')).toMatchObject({ kind: 'error', message: 'search_after needs a sort' })
    expect(parseDocumentQuery('{"_source":{"excludes":["raw_text"]}}').kind).toBe('error')
  })
  it('pages with search_after on a total order', () => {
    const r = pagedRequest({ query: {}, size: 20, from: 0, sort: [{ field: 'quality_score', order: 'desc' }] }, [87, 'doc-1'])
    expect(r.sort).toEqual([{ field: 'quality_score', order: 'desc' }, { field: 'id', order: 'asc' }])
    expect(r.search_after).toEqual([87, 'doc-1'])
    expect(pagedRequest({ query: {}, size: 20 }, undefined).sort).toEqual([{ field: '_score', order: 'desc' }, { field: 'id', order: 'asc' }])
  })
  it('marks highlights without trusting HTML', () => {
    expect(highlightParts('a <em>gun</em> and <b>x</b>')).toEqual([{ text: 'a ', mark: false }, { text: 'gun', mark: true }, { text: ' and <b>x</b>', mark: false }])
  })
})

describe('aggregations', () => {
  it('shows buckets with sub-metrics as a table', () => {
    const v = aggView({ buckets: [{ key: 'crime', doc_count: 3, avg_q: { value: 61.5 } }, { key: 'news', doc_count: 1, avg_q: { value: null } }] })
    expect(v).toEqual({ kind: 'buckets', columns: ['avg_q'], rows: [{ key: 'crime', docCount: 3, values: { avg_q: '61.5' }, depth: 0, path: [] }, { key: 'news', docCount: 1, values: { avg_q: '—' }, depth: 0, path: [] }] })
  })
  it('shows a date field\'s sort value as the date, other sort values as JSON', async () => {
    const { sortValuesText } = await import('@/lib/documentQuery')
    const sort = [{ field: 'crawled_at', order: 'desc' as const }, { field: 'id', order: 'asc' as const }]
    expect(sortValuesText([1767225600000, 'doc-1'], sort, { crawled_at: '2026-01-01T00:00:00Z', id: 'doc-1' })).toBe('2026-01-01T00:00:00.000Z, "doc-1"')
    expect(sortValuesText([42], [{ field: 'word_count', order: 'desc' }], { word_count: 42 })).toBe('42')
  })
  it('keeps the buckets of a bucket sub-aggregation, under their parent', () => {
    const v = aggView({ buckets: [
      { key: 1767225600000, key_as_string: '2026-01-01', doc_count: 3, by_source: { doc_count_error_upper_bound: 0, buckets: [{ key: 'a', doc_count: 2 }, { key: 'b', doc_count: 1 }] } },
      { key: 1767312000000, key_as_string: '2026-01-02', doc_count: 0, by_source: { buckets: [] } },
    ] })
    expect(v.kind === 'buckets' && v.rows.map((r) => [r.depth, r.key, r.docCount])).toEqual([[0, '2026-01-01', 3], [1, 'a', 2], [1, 'b', 1], [0, '2026-01-02', 0]])
  })
  it('shows metrics and stats as values', () => {
    expect(aggView({ value: 12 })).toEqual({ kind: 'values', values: [['value', '12']] })
    expect(aggView({ count: 2, min: 1, max: 3, avg: 2, sum: 4 }).kind).toBe('values')
  })
})

describe('escapeControl', () => {
  it('shows terminal escapes and newlines escaped', async () => {
    const { escapeControl } = await import('@/lib/text')
    expect(escapeControl('mallory\n\x1b[31mred\u0000')).toBe('mallory\\n\\x1b[31mred\\x00')
    expect(escapeControl('plain operator')).toBe('plain operator')
  })
})

describe('time ranges', () => {
  it('ends the window now, to the second, and sums a matrix per timestamp', async () => {
    const { rangeWindow, matrixPoints } = await import('@/lib/timeRange')
    expect(rangeWindow('1h', 1_700_000_012_345)).toEqual({ start: 1_700_000_012 - 3600, end: 1_700_000_012, step: 30, lookback: 30 })
    expect(rangeWindow('15m', 0).step).toBe(8)
    expect(matrixPoints([{ values: [[10, '1'], [20, '2']] }, { values: [[20, '3'], [30, 'NaN']] }])).toEqual([{ t: 10_000, v: 1 }, { t: 20_000, v: 5 }])
  })
})

describe('charts on a time axis', () => {
  it("reads each step's whole look-back, so a week's range sees twenty minutes of samples", async () => {
    const { rangeWindow, withLookback } = await import('@/lib/timeRange')
    const week = rangeWindow('7d', 1_700_000_000_000)
    expect(week.lookback).toBe(week.step)
    expect(rangeWindow('15m', 0).lookback).toBe(30)
    expect(withLookback('sum(max_over_time(classifier_queue_depth[$lookback]))', week.lookback)).toBe(`sum(max_over_time(classifier_queue_depth[${week.step}s]))`)
  })

  it('puts every step of the range on the grid, a step without a sample as a gap', async () => {
    const { onGrid, seriesByLabel } = await import('@/lib/timeRange')
    expect(onGrid([{ t: 20_000, v: 3 }], 10, 40, 10)).toEqual([{ t: 10_000, v: null }, { t: 20_000, v: 3 }, { t: 30_000, v: null }, { t: 40_000, v: null }])
    const split = seriesByLabel([
      { metric: { state: 'retrying' }, values: [[10, '0'], [20, '0']] },
      { metric: { state: 'exhausted' }, values: [[20, '4']] },
    ], 'state', 10, 20, 10)
    expect(split).toEqual({ retrying: [{ t: 10_000, v: 0 }, { t: 20_000, v: 0 }], exhausted: [{ t: 10_000, v: null }, { t: 20_000, v: 4 }] })
  })

  it('captions the latest value, or since when there is none, never an old value as current', async () => {
    const { latestOf } = await import('@/lib/chartAxis')
    const t = Date.UTC(2026, 0, 1, 12, 0)
    const hhmm = (ms: number) => new Date(ms).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' })
    expect(latestOf([{ t, v: 1 }, { t: t + 60_000, v: 0 }])).toBe(`0 at ${hhmm(t + 60_000)}`)
    expect(latestOf([{ t, v: 1 }, { t: t + 60_000, v: null }, { t: t + 120_000, v: null }])).toBe(`no data since ${hhmm(t + 60_000)}`)
    expect(latestOf([{ t, v: null }])).toBe('no data in the range')
  })
})
