import { describe, expect, it } from 'vitest'
import { nextTick, ref } from 'vue'
import { parseDocumentQuery } from '@/lib/documentQuery'
import { segmentText } from '@/lib/highlight'
import { addKeywords, removeKeyword } from '@/lib/keywords'
import { parseMetrics, sumMetric } from '@/lib/prometheus'
import { formatBytes, formatDuration, formatNumber, formatRelative } from '@/lib/format'
import { indexTypeOf, validateIndexName } from '@/lib/indexName'
import { checkSettings, refreshIntervalError } from '@/lib/indexSettings'
import { filterIndices, summarizeIndices } from '@/lib/indices'
import { ruleEffect, ruleEffects, topicsOf, validateRuleInput } from '@/lib/rules'
import { matchesIdSearch, refreshInterval } from '@/lib/tables'
import { useCursorPages } from '@/composables/useCursorPages'
import { useSelection } from '@/composables/useSelection'
import { isExpired } from '@/auth/session'
import { shouldRetry } from '@/queryClient'
import { ApiError } from '@/api/http'
import type { IndexSummary } from '@/types/indexManager'
import type { Rule, RuleEffect } from '@/types/classifier'

describe('parseDocumentQuery', () => {
  it('turns text into a multi_match', () => {
    const q = parseDocumentQuery(' crime shooting ')
    expect(q.kind).toBe('text')
    if (q.kind !== 'text') return
    expect(q.request.query).toEqual({ multi_match: { query: 'crime shooting', fields: expect.arrayContaining(['title^2', 'raw_text']) } })
    expect(q.request.size).toBe(20)
  })
  it('sends JSON as query DSL, bare or as a full body', () => {
    const bare = parseDocumentQuery('{"match":{"title":"crime"}}', 10, 30)
    expect(bare).toEqual({ kind: 'json', request: { query: { match: { title: 'crime' } }, size: 10, from: 30 } })
    const full = parseDocumentQuery('{"query":{"match_all":{}},"size":5,"sort":[{"field":"crawled_at","order":"desc"}]}')
    expect(full.kind === 'json' && full.request).toMatchObject({ query: { match_all: {} }, size: 5, sort: [{ field: 'crawled_at', order: 'desc' }] })
  })
  it('refuses malformed JSON and empty input', () => {
    expect(parseDocumentQuery('{"match":').kind).toBe('error')
    expect(parseDocumentQuery('   ').kind).toBe('error')
  })
})

describe('segmentText', () => {
  it('splits around highlights, merging overlaps and clipping', () => {
    const text = 'A break-in and a burglary'
    const segs = segmentText(text, [
      { start: 17, end: 25, keyword: 'burglary' },
      { start: 2, end: 10, keyword: 'break in' },
      { start: 4, end: 8, keyword: 'eak' },
      { start: 20, end: 99, keyword: 'x' },
    ])
    expect(segs.map((s) => s.text).join('')).toBe(text)
    expect(segs.filter((s) => s.keyword).map((s) => s.text)).toEqual(['break-in', 'burglary'])
  })
  it('handles no highlights', () => {
    expect(segmentText('abc', [])).toEqual([{ text: 'abc' }])
  })
})

describe('keywords', () => {
  it('adds comma and line separated keywords without duplicates', () => {
    expect(addKeywords(['Gun'], 'gun, knife\n  armed   robbery ,,')).toEqual(['Gun', 'knife', 'armed robbery'])
    expect(removeKeyword(['a', 'b', 'c'], 1)).toEqual(['a', 'c'])
  })
})

describe('prometheus', () => {
  it('parses samples and sums a metric over labels', () => {
    const text = `# HELP x\n# TYPE classifier_dlq_depth gauge\nclassifier_dlq_depth{source="a"} 2\nclassifier_dlq_depth{source="b\\"q"} 3\nclassifier_queue_depth 7 1700000000\nup +Inf\n`
    const s = parseMetrics(text)
    expect(s).toHaveLength(4)
    expect(s[1]!.labels.source).toBe('b"q')
    expect(sumMetric(s, 'classifier_dlq_depth')).toBe(5)
    expect(sumMetric(s, 'classifier_queue_depth')).toBe(7)
    expect(sumMetric(s, 'missing')).toBeNull()
  })
})

describe('format', () => {
  it('formats bytes, numbers, durations and relative times', () => {
    expect(formatBytes(0)).toBe('0 B')
    expect(formatBytes(1536)).toBe('1.5 KiB')
    expect(formatBytes(3 * 1024 * 1024)).toBe('3 MiB')
    expect(formatNumber(1234567)).toBe('1,234,567')
    expect(formatNumber(undefined)).toBe('—')
    expect(formatDuration(0.42)).toBe('0.4s')
    expect(formatDuration(185)).toBe('3m 5s')
    expect(formatDuration(3 * 86400 + 4 * 3600)).toBe('3d 4h')
    const now = Date.parse('2026-11-25T12:00:00Z')
    expect(formatRelative('2026-11-25T11:59:00Z', now)).toBe('1m 0s ago')
    expect(formatRelative('2026-11-25T12:00:30Z', now)).toBe('in 30s')
    expect(formatRelative(null, now)).toBe('—')
  })
})

describe('index names', () => {
  it('follows the index-manager rules', () => {
    expect(validateIndexName('metro_news_raw_content')).toBeNull()
    expect(validateIndexName('metro-x_classified_content')).toBeNull()
    expect(validateIndexName('Metro_raw_content')).toMatch(/lowercase/)
    expect(validateIndexName('.kibana')).toMatch(/System/)
    expect(validateIndexName('metro')).toMatch(/_raw_content/)
    expect(validateIndexName('a b_raw_content')).toMatch(/source part/)
    expect(indexTypeOf('x_raw_content')).toBe('raw_content')
  })
  it('checks the settings of a new index with the index-manager bounds', () => {
    const form = (shards = '', replicas = '', refreshInterval = '') => checkSettings({ shards, replicas, refreshInterval })
    expect(form()).toEqual({ settings: {}, errors: {} })
    expect(form('8', '0', '5m')).toEqual({ settings: { number_of_shards: 8, number_of_replicas: 0, refresh_interval: '5m' }, errors: {} })
    expect(form(' 1 ', '3', '1000ms').settings).toEqual({ number_of_shards: 1, number_of_replicas: 3, refresh_interval: '1000ms' })
    expect(form('0').errors.shards).toMatch(/from 1 to 8/)
    expect(form('9').errors.shards).toMatch(/from 1 to 8/)
    expect(form('1.5').errors.shards).toMatch(/whole number/)
    expect(form('', '4').errors.replicas).toMatch(/from 0 to 3/)
    expect(form('', '-1').errors.replicas).toMatch(/whole number/)
    expect(form('2', '9').settings).toEqual({ number_of_shards: 2 })
    for (const bad of ['999ms', '301s', '6m', '-1', '1h', '1 s', '1.5s', 's']) expect(refreshIntervalError(bad), bad).not.toBeNull()
    for (const good of ['1s', '1000ms', '300s', '5m', '30s']) expect(refreshIntervalError(good), good).toBeNull()
  })
  it('filters and summarizes the index list', () => {
    const idx = (name: string, index_type: IndexSummary['index_type'], doc_count: number, storage_bytes: number): IndexSummary => ({
      name, index_type, doc_count, storage_bytes, health: 'green', status: 'open', storage_size: '', primary_count: 1, replica_count: 0, created_at: '',
    })
    const list = [idx('b_raw_content', 'raw_content', 10, 1024), idx('a_classified_content', 'classified_content', 5, 1024), idx('c_raw_content', 'raw_content', 1, 0)]
    expect(filterIndices(list, '', 'raw_content').map((i) => i.name)).toEqual(['b_raw_content', 'c_raw_content'])
    expect(filterIndices(list, 'A_', 'all').map((i) => i.name)).toEqual(['a_classified_content'])
    expect(summarizeIndices(list)).toEqual({ total: 3, docs: 16, storage: '2 KiB' })
  })
})

describe('rules', () => {
  it('validates a rule as the classifier does', () => {
    expect(validateRuleInput({ name: 'x', topic: 'crime_x', keywords: ['a'], min_confidence: 0.3, priority: 1 })).toEqual([])
    const p = validateRuleInput({ name: '', topic: 'Crime', keywords: [], min_confidence: 2, priority: 1.5 })
    expect(p).toHaveLength(5)
  })
  it('takes the topic crime for exclude rules only, and a known effect', () => {
    const base = { name: 'Sports and games context', topic: 'crime', keywords: ['derby', 'video game'] }
    expect(validateRuleInput({ ...base, effect: 'exclude' })).toEqual([])
    expect(validateRuleInput(base)).toEqual(['The topic crime (every crime subcategory) is for exclude rules only; name a crime subcategory otherwise'])
    expect(validateRuleInput({ ...base, effect: 'override' })).toHaveLength(1)
    expect(validateRuleInput({ ...base, topic: 'violent_crime', effect: 'override' })).toEqual([])
    expect(validateRuleInput({ ...base, topic: 'sports', effect: 'veto' as RuleEffect })).toEqual(['Effect must be support, exclude or override'])
  })
  it('reads a rule without an effect as support, and has a help line per effect', () => {
    expect(ruleEffect({})).toBe('support')
    expect(ruleEffect({ effect: 'exclude' })).toBe('exclude')
    expect(ruleEffects.map((e) => e.value)).toEqual(['support', 'exclude', 'override'])
    for (const e of ruleEffects) expect(e.help.length).toBeGreaterThan(10)
  })
  it('lists topics once', () => {
    const r = (topic: string) => ({ topic }) as Rule
    expect(topicsOf([r('b'), r('a'), r('b')])).toEqual(['a', 'b'])
  })
})

describe('tables and selection', () => {
  it('pauses auto-refresh while rows are selected', () => {
    expect(refreshInterval(5000, 0)).toBe(5000)
    expect(refreshInterval(5000, 2)).toBe(false)
    expect(matchesIdSearch('ABC', 'x', 'zabcz')).toBe(true)
    expect(matchesIdSearch('', 'x')).toBe(true)
    expect(matchesIdSearch('q', 'x', 'y')).toBe(false)
  })
  it('selects, selects all, and prunes vanished rows', () => {
    const rows = ref(['a', 'b', 'c'])
    const s = useSelection(rows)
    s.toggle('a')
    expect(s.someSelected.value).toBe(true)
    s.toggleAll()
    expect(s.allSelected.value).toBe(true)
    rows.value = ['b']
    s.prune()
    expect(s.ids.value).toEqual(['b'])
    s.toggleAll()
    expect(s.count.value).toBe(0)
  })
})

describe('session and retries', () => {
  it('treats missing or past expiry as expired', () => {
    expect(isExpired(null)).toBe(true)
    expect(isExpired({ token: 't', user: 'u', expiresAt: '2026-11-25T10:00:00Z' }, Date.parse('2026-11-25T11:00:00Z'))).toBe(true)
    expect(isExpired({ token: 't', user: 'u', expiresAt: '2026-11-25T12:00:00Z' }, Date.parse('2026-11-25T11:00:00Z'))).toBe(false)
    expect(isExpired({ token: 't', user: 'u', expiresAt: 'garbage' })).toBe(true)
  })
  it('never retries a 4xx', () => {
    expect(shouldRetry(0, new ApiError(401, 'x', 'y'))).toBe(false)
    expect(shouldRetry(0, new ApiError(503, 'x', 'y'))).toBe(true)
    expect(shouldRetry(2, new ApiError(503, 'x', 'y'))).toBe(false)
  })
})

describe('useCursorPages', () => {
  it('keeps a stack of cursors for Previous and Next, and resets on change', async () => {
    const filter = ref({ source: '' })
    const pages = useCursorPages(filter)
    expect(pages.cursor.value).toBeUndefined()
    expect(pages.hasPrevious.value).toBe(false)
    pages.next('c1')
    pages.next('c2')
    expect(pages.cursor.value).toBe('c2')
    expect(pages.page.value).toBe(3)
    pages.next(null) // the last page: nothing changes
    expect(pages.page.value).toBe(3)
    pages.previous()
    expect(pages.cursor.value).toBe('c1')
    filter.value = { source: 'cbc' }
    await nextTick()
    expect(pages.page.value).toBe(1)
    expect(pages.cursor.value).toBeUndefined()
    pages.previous() // already on the first page
    expect(pages.page.value).toBe(1)
  })
})

// One regime per rule (rules.Rule.Threshold): the form sends min_keywords,
// and the table and the playground name the threshold the same way.
describe('rule thresholds', () => {
  it('names the deciding threshold from the service, else from the fields', async () => {
    const { thresholdText, ruleThreshold } = await import('@/lib/rules')
    expect(thresholdText({ min_keywords: 2, min_confidence: 0.3, threshold: 'min_keywords' })).toBe('min_keywords 2')
    expect(thresholdText({ min_keywords: 0, min_confidence: 0.3 })).toBe('min_confidence 0.30')
    expect(ruleThreshold({ min_keywords: 3, min_confidence: 0.3 })).toBe('min_keywords')
    // Under spec scoring the service says min_confidence although min_keywords is set.
    expect(thresholdText({ min_keywords: 3, min_confidence: 0.4, threshold: 'min_confidence' })).toBe('min_confidence 0.40')
  })
  it('checks min_keywords against the keywords, as the service does', async () => {
    const { validateRuleInput } = await import('@/lib/rules')
    const base = { name: 'R', topic: 'violent_crime', keywords: ['a', 'b'] }
    expect(validateRuleInput({ ...base, min_keywords: 2 })).toEqual([])
    expect(validateRuleInput({ ...base, min_keywords: 0 })).toEqual([])
    expect(validateRuleInput({ ...base, min_keywords: 3 })).toEqual(['Distinct keywords needed must be at most the number of keywords (2)'])
    expect(validateRuleInput({ ...base, min_keywords: 1.5 })).toHaveLength(1)
  })
})
