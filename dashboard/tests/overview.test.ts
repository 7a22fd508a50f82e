import { afterEach, describe, expect, it, vi } from 'vitest'
import { flushPromises, mount } from '@vue/test-utils'
import { QueryClient, VueQueryPlugin } from '@tanstack/vue-query'
import { createMemoryHistory, createRouter } from 'vue-router'

// The Overview reads one summary (GET /api/overview) for every card and
// chart: its refresh timer and how a failed part shows are under test.
const api = vi.hoisted(() => ({ overview: vi.fn() }))
vi.mock('@/api/client', () => ({
  dashboardApi: { overview: api.overview },
  fetchRuntimeConfig: async () => ({ read_only: true, prometheus: false }),
}))

afterEach(() => vi.useRealTimers())

const ok = <T>(data: T) => ({ ok: true, status: 200, data })
const down = { ok: false, status: 502, error: { code: 'upstream_unavailable', message: 'the publisher is unavailable' } }
const noProm = { ok: false, status: 503, error: { code: 'prometheus_not_configured', message: 'no Prometheus' } }

describe('OverviewView', () => {
  it('makes one request per refresh for every card, and says which service failed', async () => {
    vi.useFakeTimers()
    api.overview.mockImplementation(async (range: string) => ({
      range, generated_at: new Date().toISOString(),
      stats: ok({ total: 0, per_interval: [], by_topic: {} }), // no chart drawn (jsdom has no canvas)
      dlq: ok({ pending: 1, exhausted: 2 }),
      outbox: down,
      classified: ok({ count: 7 }),
      metrics: ok({ queue_depth: 4, active_workers: 2 }),
      history: noProm,
      throughput: noProm,
    }))
    const { default: OverviewView } = await import('@/views/OverviewView.vue')
    const router = createRouter({ history: createMemoryHistory(), routes: [{ path: '/', component: OverviewView }] })
    await router.push('/')
    const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } })
    const w = mount(OverviewView, { global: { plugins: [[VueQueryPlugin, { queryClient }], router] as never, stubs: { RouterLink: true } } })
    await flushPromises()
    expect(api.overview).toHaveBeenCalledTimes(1)
    expect(api.overview).toHaveBeenLastCalledWith('1h', true, '')
    expect(w.get('[data-testid="overview-classified"]').text()).toContain('7')
    expect(w.get('[data-testid="overview-queue"]').text()).toContain('4')
    expect(w.get('[data-testid="overview-dlq"]').text()).toContain('3')
    expect(w.get('[data-testid="overview-backlog"]').text()).toMatch(/publisher unavailable \(502\)/)
    // Three refreshes: one request each, whatever the number of cards.
    for (let i = 0; i < 3; i++) {
      await vi.advanceTimersByTimeAsync(10_000)
      await flushPromises()
    }
    expect(api.overview).toHaveBeenCalledTimes(4)
    expect(api.overview).toHaveBeenLastCalledWith('1h', false, '')
    w.unmount()
  }, 60_000)

  it('moves every panel with the picked range, and narrows the per-source ones to the picked source', async () => {
    api.overview.mockReset()
    api.overview.mockImplementation(async (range: string, _fresh: boolean, source: string) => ({
      range, source, bucket_seconds: range === '7d' ? 7200 : 60, generated_at: new Date().toISOString(),
      stats: ok({ total: 3, per_interval: [], by_topic: { crime: 3 }, by_source: { metro: 2, sports: 1 } }),
      dlq: ok({ pending: 0, exhausted: 0 }),
      outbox: ok({ counts: {} }),
      classified: ok({ count: 2 }),
      metrics: ok({ queue_depth: 0, active_workers: 1 }),
      history: noProm,
      throughput: noProm,
    }))
    const { default: OverviewView } = await import('@/views/OverviewView.vue')
    const router = createRouter({ history: createMemoryHistory(), routes: [{ path: '/', component: OverviewView }] })
    await router.push('/?range=7d&source=metro')
    const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } })
    const w = mount(OverviewView, { global: { plugins: [[VueQueryPlugin, { queryClient }], router] as never, stubs: { RouterLink: true, TimeSeriesChart: true } } })
    await flushPromises()
    expect(api.overview).toHaveBeenLastCalledWith('7d', true, 'metro')
    expect(w.get('[data-testid="overview-classified"]').text()).toContain('Documents classified (7d)')
    expect(w.get('[data-testid="overview-last-minute"]').text()).toContain('of metro, over the last complete 2 h')
    expect(w.text()).toContain('Topics (7d)')
    expect(w.text()).toContain('Per minute over the last 7d')
    // The sources to pick from: every one classified over the range.
    const options = w.findAll('[data-testid="overview-source"] option').map((o) => o.text())
    expect(options).toEqual(['every source', 'metro', 'sports'])
    // Every source again: one more request, not narrowed.
    await w.get('[data-testid="overview-source"]').setValue('')
    await flushPromises()
    expect(api.overview).toHaveBeenLastCalledWith('7d', false, '')
    w.unmount()
  }, 60_000)
})
