import { describe, expect, it } from 'vitest'
import { mount } from '@vue/test-utils'
import Figure from '@/components/ui/Figure.vue'
import StatCard from '@/components/ui/StatCard.vue'
import QueryState from '@/components/ui/QueryState.vue'
import { ApiError } from '@/api/http'
import { failureText, figureState, lastGoodText, type FigureSource } from '@/lib/figure'

const NOW = Date.parse('2026-01-01T12:00:00Z')
const down = new ApiError(502, 'upstream_unavailable', 'the service behind /api/publisher is unavailable')
const source = (s: Partial<FigureSource>): FigureSource => ({ service: 'publisher', pending: false, error: null, updatedAt: NOW - 1000, ...s })

describe('Figure', () => {
  it('shows the value when its query answered', () => {
    const w = mount(Figure, { props: { value: '1,234', source: source({}), now: NOW } })
    expect(w.get('[data-figure="value"]').text()).toBe('1,234')
  })

  it('shows a placeholder, never a number, while loading', () => {
    const w = mount(Figure, { props: { value: '0', source: source({ pending: true, updatedAt: 0 }), now: NOW } })
    expect(w.find('[data-figure="loading"]').exists()).toBe(true)
    expect(w.text()).not.toMatch(/\d/)
    expect(w.text()).toContain('loading')
  })

  it('names the failing service in text, and no number, when the query failed with no value before', () => {
    const w = mount(Figure, { props: { value: '0', source: source({ pending: true, error: down, updatedAt: 0 }), now: NOW } })
    const el = w.get('[data-figure="error"]')
    expect(el.text()).toBe('publisher unavailable (502)')
    expect(el.text().replace('(502)', '')).not.toMatch(/\d/)
  })

  it('keeps the last good value greyed beside its age when a refresh failed', () => {
    const w = mount(Figure, { props: { value: '42', valueClass: 'text-success', source: source({ error: down, updatedAt: NOW - 2 * 60_000 }), now: NOW } })
    const el = w.get('[data-figure="stale"]')
    expect(el.text()).toContain('42')
    expect(el.text()).toContain('publisher unavailable (502) · last good 2 min ago')
    expect(el.find('.text-success').exists()).toBe(false)
    expect(el.find('.text-muted-foreground').text()).toBe('42')
  })

  it('in a table cell says "unavailable", the reason in its title and for screen readers', () => {
    const w = mount(Figure, { props: { value: '0', compact: true, source: source({ service: 'classifier', error: new ApiError(503, 'http_503', 'x'), updatedAt: 0 }), now: NOW } })
    const el = w.get('[data-figure="error"]')
    expect(el.attributes('title')).toBe('classifier unavailable (503)')
    expect(el.get('.sr-only').text()).toBe('classifier unavailable (503)')
    expect(el.text()).toContain('unavailable')
  })
})

describe('figure helpers', () => {
  it('orders the states: an error first, then a missing first answer', () => {
    expect(figureState({ pending: true, error: null, updatedAt: 0 })).toBe('loading')
    expect(figureState({ pending: true, error: down, updatedAt: 0 })).toBe('error')
    expect(figureState({ pending: false, error: down, updatedAt: 5 })).toBe('stale')
    expect(figureState({ pending: false, error: null, updatedAt: 5 })).toBe('value')
  })
  it('names the failure by the service and its answer', () => {
    expect(failureText('publisher', down)).toBe('publisher unavailable (502)')
    expect(failureText('classifier', new ApiError(0, 'network_error', 'x'))).toBe('classifier unreachable')
    expect(failureText('index-manager', new ApiError(500, 'internal', 'x'))).toBe('index-manager error (500)')
    expect(failureText('publisher', new Error('x'))).toBe('publisher failed')
  })
  it('tells the age of the last good value', () => {
    expect(lastGoodText(NOW - 12_000, NOW)).toBe('last good 12 s ago')
    expect(lastGoodText(NOW - 150_000, NOW)).toBe('last good 2 min ago')
    expect(lastGoodText(NOW - 2 * 3600_000, NOW)).toBe('last good 2h 0m ago')
  })
})

describe('StatCard with a source', () => {
  it('leaves out the hint, which holds figures of the same query, until there is data', async () => {
    const w = mount(StatCard, { props: { label: 'Published', value: '0', hint: '0 failed', tone: 'success', source: source({ error: down, updatedAt: 0 }) } })
    expect(w.get('[data-testid="stat-value"]').text()).toBe('publisher unavailable (502)')
    expect(w.text()).not.toContain('0 failed')
    await w.setProps({ source: source({}) })
    expect(w.get('[data-figure="value"]').classes()).toContain('text-success')
    expect(w.text()).toContain('0 failed')
  })
})

describe('QueryState with a source', () => {
  it('names the service when nothing loaded, and keeps stale content under the failure', async () => {
    const w = mount(QueryState, { props: { loading: false, error: down, label: 'outbox rows', source: source({ error: down, updatedAt: 0 }) }, slots: { default: '<p id="data">rows</p>' } })
    expect(w.get('[data-state="error"]').text()).toContain('Could not load outbox rows: publisher unavailable (502): the service behind /api/publisher is unavailable')
    expect(w.find('#data').exists()).toBe(false)
    await w.setProps({ source: source({ error: down, updatedAt: Date.now() - 60_000 }) })
    expect(w.get('[data-state="stale"]').text()).toContain('publisher unavailable (502) · last good 1 min ago')
    expect(w.find('#data').exists()).toBe(true)
  })
})

describe('SourcesTable without the classifier', () => {
  it('keeps the Elasticsearch figures and marks the classifier-only columns unavailable', async () => {
    const { default: SourcesTable } = await import('@/components/sources/SourcesTable.vue')
    const { buildSourceRows } = await import('@/lib/sources')
    const rows = buildSourceRows([{ name: 'metro_raw_content', doc_count: 24 }, { name: 'metro_classified_content', doc_count: 20 }] as never, [], { metro: { failed: 1, crime: 3 } })
    const gone = source({ service: 'classifier', pending: true, error: new ApiError(503, 'http_503', 'x'), updatedAt: 0 })
    const w = mount(SourcesTable, {
      props: { rows, sortKey: 'documents', sortDir: 'desc', sources: { stats: gone, reputation: gone, counts: source({ service: 'index-manager' }) } },
      global: { stubs: { RouterLink: { template: '<a><slot /></a>' } } },
    })
    const cell = (id: string) => w.get(`[data-testid="${id}"]`).text()
    expect([cell('documents'), cell('classified'), cell('failed'), cell('crime')]).toEqual(['24', '20', '1', '3'])
    for (const id of ['pending', 'published', 'rejected', 'dlq-rate', 'attempts']) {
      expect(w.get(`[data-testid="${id}"] [data-figure="error"]`).attributes('title')).toBe('classifier unavailable (503)')
    }
  })
})
