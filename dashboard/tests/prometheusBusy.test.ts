// The Prometheus proxy's 429 (a cap of queries in flight, per user or in
// all): the client keeps a page's own queries under the per-user cap, and a
// 429 is retried with backoff, shown as "busy, retrying", not as an error.
import { afterEach, describe, expect, it, vi } from 'vitest'
import { defineComponent, h } from 'vue'
import { flushPromises, mount } from '@vue/test-utils'
import { QueryClient, VueQueryPlugin, useQuery } from '@tanstack/vue-query'
import { ApiError, createHttpClient, parseRetryAfter, type HttpClient } from '@/api/http'
import { PROMETHEUS_MAX_IN_FLIGHT, createPrometheusApi } from '@/api/prometheus'
import { BUSY_RETRIES, retryDelay, shouldRetry } from '@/queryClient'

vi.mock('@/composables/usePrometheus', async () => {
  const { computed } = await import('vue')
  return { usePrometheus: () => ({ enabled: computed(() => true), missing: computed(() => false) }) }
})

afterEach(() => vi.useRealTimers())

const busy = () => new ApiError(429, 'too_many_requests', 'you have 2 Prometheus queries running', 1)

describe('a 429 of the Prometheus proxy', () => {
  it('is an ApiError that is busy, with the Retry-After it carried', async () => {
    const f = vi.fn(async () => new Response(JSON.stringify({ error: { code: 'too_many_requests', message: 'busy' } }), { status: 429, headers: { 'Retry-After': '3' } }))
    const http = createHttpClient({ baseUrl: '', getToken: () => 't', fetch: f as unknown as typeof fetch })
    const err = await http.get('/query').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ status: 429, code: 'too_many_requests', isBusy: true, retryAfter: 3 })
    expect(parseRetryAfter(null)).toBeUndefined()
    expect(parseRetryAfter('Thu, 01 Jan 1970 00:00:10 GMT', 4_000)).toBe(6)
  })

  it('is retried, after at least its Retry-After and longer each time, and other 4xx are not', () => {
    expect(shouldRetry(0, busy())).toBe(true)
    expect(shouldRetry(BUSY_RETRIES - 1, busy())).toBe(true)
    expect(shouldRetry(BUSY_RETRIES, busy())).toBe(false)
    expect(shouldRetry(0, new ApiError(400, 'query_not_allowed', 'x'))).toBe(false)
    const mid = () => 0.5
    expect(retryDelay(0, busy(), mid)).toBe(1000)
    expect(retryDelay(1, busy(), mid)).toBe(2000)
    expect(retryDelay(0, new ApiError(429, 'x', 'y', 5), mid)).toBe(5000)
    expect(retryDelay(10, busy(), mid)).toBe(30_000)
    expect(retryDelay(1, new ApiError(503, 'x', 'y'))).toBe(2000)
  })
})

describe('createPrometheusApi', () => {
  it('sends at most PROMETHEUS_MAX_IN_FLIGHT queries at once and queues the rest in order', async () => {
    const pending: { path: string; resolve: (v: unknown) => void }[] = []
    const http = { get: (path: string) => new Promise((resolve) => pending.push({ path, resolve })) } as unknown as HttpClient
    const api = createPrometheusApi(http)
    const results = [api.query('a'), api.queryRange('b', 0, 60, 15), api.query('c'), api.alerts(), api.query('e')]
    await flushPromises()
    expect(pending).toHaveLength(PROMETHEUS_MAX_IN_FLIGHT)
    pending[0]!.resolve('r0')
    await flushPromises()
    expect(pending.map((p) => p.path)).toEqual(['/query', '/query_range', '/query'])
    for (let i = 1; i < 5; i++) {
      pending[i]!.resolve(`r${i}`)
      await flushPromises()
    }
    expect(pending.map((p) => p.path)).toEqual(['/query', '/query_range', '/query', '/alerts', '/query'])
    expect(await Promise.all(results)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4'])
  })

  it('gives the slot back when a query fails', async () => {
    let calls = 0
    const http = { get: async () => { calls++; throw busy() } } as unknown as HttpClient
    const api = createPrometheusApi(http, 1)
    for (let i = 0; i < 3; i++) await expect(api.query('x')).rejects.toMatchObject({ isBusy: true })
    expect(calls).toBe(3)
  })
})

describe('PrometheusState', () => {
  it('says "busy, retrying" while the proxy answers 429, then shows the panel', async () => {
    vi.useFakeTimers()
    const { default: PrometheusState } = await import('@/components/ui/PrometheusState.vue')
    let calls = 0
    const Panel = defineComponent({
      setup() {
        const q = useQuery({ queryKey: ['busy'], queryFn: async () => { if (++calls === 1) throw busy(); return 'fine' } })
        return () => h(PrometheusState, { query: q, empty: false, emptyText: '', label: 'queue history' }, () => h('span', { 'data-testid': 'panel' }, String(q.data.value)))
      },
    })
    const queryClient = new QueryClient({ defaultOptions: { queries: { retry: shouldRetry, retryDelay: (n, e) => retryDelay(n, e, () => 0.5) } } })
    const w = mount(Panel, { global: { plugins: [[VueQueryPlugin, { queryClient }]] as never } })
    await flushPromises()
    expect(calls).toBe(1)
    expect(w.get('[data-testid="prometheus-busy"]').text()).toBe('Prometheus is busy; retrying queue history…')
    expect(w.text()).not.toContain('you have 2 Prometheus queries running')
    await vi.advanceTimersByTimeAsync(1000)
    await flushPromises()
    expect(calls).toBe(2)
    expect(w.find('[data-testid="prometheus-busy"]').exists()).toBe(false)
    expect(w.get('[data-testid="panel"]').text()).toBe('fine')
    w.unmount()
  })
})
