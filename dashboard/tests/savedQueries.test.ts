import { describe, expect, it } from 'vitest'
import { loadSavedQueries, MAX_SAVED_QUERIES, removeSavedQuery, saveQuery, SAVED_QUERIES_KEY, savedQueryNameProblem } from '@/lib/savedQueries'

function memory() {
  const m = new Map<string, string>()
  return { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => { m.set(k, v) }, m }
}

describe('saved queries', () => {
  it('saves named queries with their index, replaces one of the same name, lists them by name and removes one', () => {
    const s = memory()
    saveQuery(s, { name: ' crime today ', index: 'metro_classified_content', text: '{"term":{"topics":"crime"}}' }, new Date('2026-11-27T06:00:00Z'))
    saveQuery(s, { name: 'all', index: 'metro_raw_content', text: 'harbour' }, new Date('2026-11-27T06:01:00Z'))
    saveQuery(s, { name: 'crime today', index: 'sports_classified_content', text: 'goal' }, new Date('2026-11-27T06:02:00Z'))
    expect(loadSavedQueries(s).map((q) => [q.name, q.index, q.text])).toEqual([
      ['all', 'metro_raw_content', 'harbour'],
      ['crime today', 'sports_classified_content', 'goal'],
    ])
    expect(removeSavedQuery(s, 'all').map((q) => q.name)).toEqual(['crime today'])
  })

  it('refuses an empty or overlong name, keeps at most the newest 100, and reads past bad storage', () => {
    expect(savedQueryNameProblem('  ')).toMatch(/name/)
    expect(savedQueryNameProblem('x'.repeat(81))).toMatch(/at most 80/)
    const s = memory()
    expect(() => saveQuery(s, { name: '', index: 'i', text: 't' })).toThrow()
    for (let i = 0; i < MAX_SAVED_QUERIES + 5; i++) saveQuery(s, { name: `q${String(i).padStart(3, '0')}`, index: 'i', text: 't' }, new Date(Date.UTC(2026, 0, 1, 0, i)))
    const names = loadSavedQueries(s).map((q) => q.name)
    expect(names).toHaveLength(MAX_SAVED_QUERIES)
    expect(names).not.toContain('q000')
    expect(names).toContain('q104')
    s.m.set(SAVED_QUERIES_KEY, '{not json')
    expect(loadSavedQueries(s)).toEqual([])
    s.m.set(SAVED_QUERIES_KEY, JSON.stringify([{ name: 'ok', index: 'i', text: 't', savedAt: 'x' }, { name: 1 }]))
    expect(loadSavedQueries(s).map((q) => q.name)).toEqual(['ok'])
  })
})
