import { describe, expect, it, vi } from 'vitest'
import { flushPromises, mount } from '@vue/test-utils'
import { QueryClient, VueQueryPlugin } from '@tanstack/vue-query'
import type { RuleTestResponse } from '@/types/classifier'

const plain: RuleTestResponse = {
  matches: [{
    rule_id: 1, rule_name: 'Energy and commodities', topic: 'energy', priority: 45, min_confidence: 0.25, score: 0.26,
    coverage: 0.04, hits: 2, unique_matches: 2, matched_keywords: ['oil', 'oil prices'],
    highlights: [{ keyword: 'oil prices', field: 'body', start: 0, end: 10, byte_start: 0, byte_end: 10, text: 'Oil prices' }],
  }],
  explanations: [
    {
      rule_id: 1, rule_name: 'Energy and commodities', topic: 'energy', priority: 45, matched: true, score: 0.26,
      min_confidence: 0.25, min_keywords: 2, threshold: 'min_keywords', keywords_found: ['oil', 'oil prices'], keywords: 60,
      keywords_needed: 2, keywords_missing: 0, reason: 'Matched.', highlights: [],
    },
    {
      rule_id: 2, rule_name: 'Business', topic: 'business', priority: 45, matched: false, score: 0.15,
      min_confidence: 0.3, min_keywords: 2, threshold: 'min_keywords', keywords_found: ['economy'], keywords: 70,
      keywords_needed: 2, keywords_missing: 1,
      reason: 'No match: found 1 distinct keyword (economy); min_keywords is 2, so 1 more distinct keyword of the rule would make it match.',
      highlights: [],
    },
  ],
  engine: { matcher: 'aho_corasick', stemming: true, scoring: 'min_keywords' },
  topics: ['energy'], is_crime_related: false, crime_subcategory: null, rules_version: 7,
}

// A match report the crime rules flag, vetoed by an exclude rule for crime.
const vetoed: RuleTestResponse = {
  matches: [
    { rule_id: 9, rule_name: 'Sports and games context', topic: 'crime', effect: 'exclude', priority: 200, min_confidence: 0.3, score: 0.5,
      coverage: 0.3, hits: 2, unique_matches: 2, matched_keywords: ['derby', 'striker'], highlights: [] },
    { rule_id: 1, rule_name: 'Violent crime', topic: 'violent_crime', effect: 'support', priority: 100, min_confidence: 0.25, score: 0.4,
      coverage: 0.1, hits: 2, unique_matches: 2, matched_keywords: ['shot', 'killed'], highlights: [] },
  ],
  explanations: [],
  topics: [], is_crime_related: false, crime_subcategory: null,
  vetoed: [{ topic: 'crime', vetoed_by: 'Sports and games context' }],
}
let response = plain

vi.mock('@/api/client', () => ({ classifierApi: { testRules: vi.fn(async () => response) } }))

describe('RulePlayground', () => {
  it('shows the matches and, for rules that missed, the keywords found and what they lacked', async () => {
    const { default: RulePlayground } = await import('@/components/rules/RulePlayground.vue')
    const w = mount(RulePlayground, { global: { plugins: [[VueQueryPlugin, { queryClient: new QueryClient() }]] } })
    await w.get('[data-testid="playground-body"]').setValue('Oil prices fell as the economy slowed.')
    await w.get('form').trigger('submit')
    await flushPromises()
    expect(w.get('[data-testid="playground-matches"]').text()).toContain('Energy and commodities')
    expect(w.get('[data-testid="playground-engine"]').text()).toContain('stemming on')
    const near = w.get('[data-testid="playground-explanations"]')
    expect(near.text()).toContain('1 rule found keywords but missed its threshold')
    const row = near.get('tr[data-rule="Business"]')
    expect(row.text()).toContain('economy')
    expect(row.text()).toContain('1 / 2')
    expect(row.text()).toContain('min_keywords 2')
    expect(near.text()).toContain('1 more distinct keyword')
    expect(near.find('tr[data-rule="Energy and commodities"]').exists()).toBe(false)
    // Each cell is padded apart from the next, so "0.15" and "min_keywords 2" do not run together.
    const cells = row.findAll('td')
    cells.forEach((td, i) => {
      if (i > 0) expect(td.classes().some((c) => /^(px|pl)-/.test(c)), `cell ${i} padded on its left`).toBe(true)
      if (i < cells.length - 1) expect(td.classes().some((c) => /^(px|pr)-/.test(c)), `cell ${i} padded on its right`).toBe(true)
    })
  })
  it('names the exclude rule that vetoed a topic, with each rule\'s effect', async () => {
    response = vetoed
    const { default: RulePlayground } = await import('@/components/rules/RulePlayground.vue')
    const w = mount(RulePlayground, { global: { plugins: [[VueQueryPlugin, { queryClient: new QueryClient() }]] } })
    await w.get('[data-testid="playground-body"]').setValue('The striker shot and killed off the derby.')
    await w.get('form').trigger('submit')
    await flushPromises()
    expect(w.get('[data-testid="playground-vetoed"]').text()).toBe('crime vetoed by Sports and games context')
    expect(w.get('[data-testid="playground-matches"]').text()).toContain('exclude')
    expect(w.get('[data-testid="playground-result"]').text()).not.toContain('crime:')
    response = plain
  })
})
