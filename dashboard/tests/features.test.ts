import { afterEach, describe, expect, it, vi } from 'vitest'
import { defineComponent, h } from 'vue'
import { flushPromises, mount } from '@vue/test-utils'
import { QueryClient, VueQueryPlugin } from '@tanstack/vue-query'
import { ALL_ON, featureOffMessage, parseFeatures, visibleNav } from '@/lib/features'
import { fetchFeatures } from '@/api/client'
import FeatureGate from '@/components/ui/FeatureGate.vue'
import ExportButtons from '@/components/ui/ExportButtons.vue'

/** Serves GET /api/features with the flags given (every other flag on). */
function serveFeatures(off: string[]) {
  const features = Object.fromEntries(Object.keys(ALL_ON).map((f) => [f, !off.includes(f)]))
  vi.stubGlobal('fetch', vi.fn(async (url: string) => {
    expect(url).toBe('/api/features')
    return new Response(JSON.stringify({ features, disabled: off }), { status: 200, headers: { 'Content-Type': 'application/json' } })
  }))
}

const plugins = () => ({ global: { plugins: [[VueQueryPlugin, { queryClient: new QueryClient() }]] as never } })

afterEach(() => vi.unstubAllGlobals())

describe('feature flags', () => {
  it('reads GET /api/features: a flag not named, or a server without the route, leaves the feature on', async () => {
    expect(parseFeatures({ features: { live_tail: false, exports: true } })).toEqual({ ...ALL_ON, live_tail: false })
    expect(parseFeatures(null)).toEqual(ALL_ON)
    expect(await fetchFeatures(async () => new Response('<html>', { status: 200 }))).toEqual(ALL_ON)
    expect(await fetchFeatures(async () => new Response('', { status: 404 }))).toEqual(ALL_ON)
    expect(featureOffMessage('live_tail')).toBe('The live tail is turned off by DASHBOARD_FEATURES (live_tail=off).')
  })

  it('drops the navigation entry of a disabled feature, and every feature entry until the flags load', () => {
    const items = [{ to: '/', label: 'Overview' }, { to: '/live', label: 'Live tail', feature: 'live_tail' as const }]
    expect(visibleNav(items, ALL_ON).map((i) => i.to)).toEqual(['/', '/live'])
    expect(visibleNav(items, { ...ALL_ON, live_tail: false }).map((i) => i.to)).toEqual(['/'])
    expect(visibleNav(items, undefined).map((i) => i.to)).toEqual(['/'])
  })

  it('FeatureGate shows the page when its feature is on and says it is turned off otherwise', async () => {
    serveFeatures(['live_tail'])
    const slot = { default: () => h('p', { id: 'page' }, 'the page') }
    const off = mount(FeatureGate, { props: { feature: 'live_tail' }, slots: slot, ...plugins() })
    expect(off.find('[data-testid="feature-off"]').exists()).toBe(false) // nothing while loading
    await flushPromises()
    expect(off.find('#page').exists()).toBe(false)
    expect(off.get('[data-testid="feature-off"]').text()).toContain('turned off by DASHBOARD_FEATURES')
    const on = mount(FeatureGate, { props: { feature: 'exports' }, slots: slot, ...plugins() })
    await flushPromises()
    expect(on.find('#page').exists()).toBe(true)
    expect(on.find('[data-testid="feature-off"]').exists()).toBe(false)
  })

  it('hides the export buttons with exports=off', async () => {
    const rows = async () => ({ entries: [] })
    const Two = defineComponent({ components: { ExportButtons }, setup: () => ({ rows }), template: '<ExportButtons name="x" :rows="rows" />' })
    serveFeatures(['exports'])
    const off = mount(Two, plugins())
    await flushPromises()
    expect(off.find('[data-testid="export-csv"]').exists()).toBe(false)
    serveFeatures([])
    const on = mount(Two, plugins())
    await flushPromises()
    expect(on.find('[data-testid="export-csv"]').exists()).toBe(true)
  })
})
