import { afterEach, describe, expect, it, vi } from 'vitest'
import { flushPromises, mount } from '@vue/test-utils'
import { QueryClient, VueQueryPlugin } from '@tanstack/vue-query'
import { createMemoryHistory, createRouter } from 'vue-router'

// Every request of the Overview fails but the two counted here: the view's
// refresh timers are what is under test, not its figures.
const down = () => Promise.reject(new Error('down'))
const api = vi.hoisted(() => ({
  stats: vi.fn(),
  countContent: vi.fn(),
}))
vi.mock('@/api/client', () => ({
  classifierApi: { stats: api.stats, deadLetterStats: () => down(), metrics: () => down() },
  publisherApi: { outboxStats: () => down() },
  indexManagerApi: { countContent: api.countContent },
  prometheusApi: { query: () => down(), queryRange: () => down() },
  fetchRuntimeConfig: async () => ({ read_only: true, prometheus: false }),
}))

afterEach(() => vi.useRealTimers())

describe('OverviewView', () => {
  it('reads the classified count (one _count) as often as the other cards', async () => {
    vi.useFakeTimers()
    api.stats.mockImplementation(async () => ({ total: 0, per_interval: [] }))
    api.countContent.mockImplementation(async () => ({ count: 7 }))
    const { default: OverviewView } = await import('@/views/OverviewView.vue')
    const router = createRouter({ history: createMemoryHistory(), routes: [{ path: '/', component: OverviewView }] })
    await router.push('/')
    const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } })
    const w = mount(OverviewView, { global: { plugins: [[VueQueryPlugin, { queryClient }], router] as never, stubs: { RouterLink: true } } })
    await flushPromises()
    expect(api.stats).toHaveBeenCalledTimes(1)
    expect(api.countContent).toHaveBeenCalledTimes(1)
    // Three refreshes of the cards: the classified count follows each one.
    for (let i = 0; i < 3; i++) {
      await vi.advanceTimersByTimeAsync(10_000)
      await flushPromises()
    }
    expect(api.stats).toHaveBeenCalledTimes(4)
    expect(api.countContent).toHaveBeenCalledTimes(api.stats.mock.calls.length)
    w.unmount()
  })
})
