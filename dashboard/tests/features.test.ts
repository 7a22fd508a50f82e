import { afterEach, describe, expect, it, vi } from 'vitest'
import { defineComponent, h } from 'vue'
import { flushPromises, mount } from '@vue/test-utils'
import { QueryClient, VueQueryPlugin } from '@tanstack/vue-query'
import { createMemoryHistory, createRouter } from 'vue-router'
import { ALL_ON, FEATURES, featureOffMessage, parseFeatures, routeFeature, visibleNav } from '@/lib/features'
import { fetchFeatures } from '@/api/client'
import { routes } from '@/router'
import FeatureGate from '@/components/ui/FeatureGate.vue'
import EditingOffNotice from '@/components/ui/EditingOffNotice.vue'
import ExportButtons from '@/components/ui/ExportButtons.vue'
import ViewFeatureGate from '@/components/layout/ViewFeatureGate.vue'
import AppShell from '@/components/layout/AppShell.vue'
import SourcesTable from '@/components/sources/SourcesTable.vue'
import { buildSourceRows } from '@/lib/sources'

/** Serves GET /api/features with the flags given (every other flag on). */
function serveFeatures(off: string[]) {
  const features = Object.fromEntries(Object.keys(ALL_ON).map((f) => [f, !off.includes(f)]))
  vi.stubGlobal('fetch', vi.fn(async (url: string) => {
    expect(url).toBe('/api/features')
    return new Response(JSON.stringify({ features, disabled: off }), { status: 200, headers: { 'Content-Type': 'application/json' } })
  }))
}

/** Like serveFeatures, for the app shell: /config.json too, and 404 for any other URL (the shell's GET /auth/me). */
function serveShell(off: string[]) {
  const features = Object.fromEntries(Object.keys(ALL_ON).map((f) => [f, !off.includes(f)]))
  const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } })
  vi.stubGlobal('fetch', vi.fn(async (url: string) => {
    if (url === '/api/features') return json({ features, disabled: off })
    if (url === '/config.json') return json({ read_only: false })
    return json({ error: { code: 'not_found', message: url } }, 404)
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

  it('EditingOffNotice says a page\'s editing is turned off, and what still works; nothing when it is on or while loading', async () => {
    serveFeatures(['rules_edit'])
    const slot = { default: () => 'The rules can be read.' }
    const off = mount(EditingOffNotice, { props: { feature: 'rules_edit' }, slots: slot, ...plugins() })
    expect(off.find('[data-testid="editing-off"]').exists()).toBe(false)
    await flushPromises()
    const notice = off.get('[data-testid="editing-off"]')
    expect(notice.attributes('role')).toBe('status')
    expect(notice.attributes('data-feature')).toBe('rules_edit')
    expect(notice.text()).toBe('Editing rules is turned off by DASHBOARD_FEATURES (rules_edit=off). The rules can be read.')
    const on = mount(EditingOffNotice, { props: { feature: 'reprocess' }, slots: slot, ...plugins() })
    await flushPromises()
    expect(on.find('[data-testid="editing-off"]').exists()).toBe(false)
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

  it('knows the view flags rules and index_manager, and the routes of those views name them', () => {
    expect(FEATURES).toContain('rules')
    expect(FEATURES).toContain('index_manager')
    expect(parseFeatures({ features: { rules: false, index_manager: false } })).toEqual({ ...ALL_ON, rules: false, index_manager: false })
    expect(featureOffMessage('rules')).toBe('The Rules view is turned off by DASHBOARD_FEATURES (rules=off).')
    expect(featureOffMessage('index_manager')).toBe('The Index Manager view is turned off by DASHBOARD_FEATURES (index_manager=off).')
    const children = (routes.find((r) => r.path === '/') as { children: { name: string; meta: Record<string, unknown> }[] }).children
    const featureOf = (name: string) => routeFeature(children.find((r) => r.name === name)?.meta)
    expect(featureOf('rules')).toBe('rules')
    expect(featureOf('indices')).toBe('index_manager')
    expect(featureOf('dlq')).toBeUndefined()
    expect(routeFeature({ feature: 'no_such_feature' })).toBeUndefined()
    expect(routeFeature(undefined)).toBeUndefined()
  })

  it('ViewFeatureGate never mounts a view that is turned off, keeps its title and says so', async () => {
    const mounted = vi.fn()
    const View = defineComponent({ setup: () => { mounted(); return () => h('p', { id: 'view' }, 'the rules') } })
    const slots = { default: () => h(View) }
    serveFeatures(['rules'])
    const off = mount(ViewFeatureGate, { props: { feature: 'rules', title: 'Rules' }, slots, ...plugins() })
    expect(off.find('[data-testid="view-off"]').exists()).toBe(false) // nothing while loading
    await flushPromises()
    expect(mounted).not.toHaveBeenCalled()
    expect(off.get('[data-testid="view-off"] h1').text()).toBe('Rules')
    expect(off.get('[data-testid="feature-off"]').text()).toContain('The Rules view is turned off by DASHBOARD_FEATURES (rules=off).')
    const on = mount(ViewFeatureGate, { props: { feature: 'index_manager', title: 'Index Manager' }, slots, ...plugins() })
    await flushPromises()
    expect(on.find('#view').exists()).toBe(true)
    expect(on.find('[data-testid="view-off"]').exists()).toBe(false)
    // A route without a feature shows at once, before the flags load.
    const plain = mount(ViewFeatureGate, { props: { title: 'Dead letters' }, slots, ...plugins() })
    expect(plain.find('#view').exists()).toBe(true)
  })

  it('the app shell drops the Rules and Index Manager entries and shows the notice on their routes when they are off', async () => {
    const mounted: string[] = []
    const view = (name: string) => defineComponent({ setup: () => { mounted.push(name); return () => h('p', { 'data-view': name }, name) } })
    const shell = async (off: string[], path: string) => {
      serveShell(off)
      const router = createRouter({
        history: createMemoryHistory(),
        routes: [{
          path: '/',
          component: AppShell,
          children: [
            { path: '', component: view('overview'), meta: { title: 'Overview' } },
            { path: 'indices', component: view('indices'), meta: { title: 'Index Manager', feature: 'index_manager' } },
            { path: 'rules', component: view('rules'), meta: { title: 'Rules', feature: 'rules' } },
            { path: 'dlq', component: view('dlq'), meta: { title: 'Dead letters' } },
            // The shell's other entries, so that their links resolve.
            { path: ':other(.*)', component: view('other'), meta: { title: 'Other' } },
          ],
        }],
      })
      await router.push(path)
      await router.isReady()
      const w = mount({ template: '<RouterView />' }, { global: { plugins: [[VueQueryPlugin, { queryClient: new QueryClient() }], router] as never } })
      await flushPromises()
      const nav = w.get('nav[aria-label="Main"]').findAll('a').map((a) => a.text())
      return { w, nav, router }
    }

    const off = await shell(['rules', 'index_manager'], '/rules')
    expect(off.nav).not.toContain('Rules')
    expect(off.nav).not.toContain('Index Manager')
    expect(off.nav).toContain('Dead letters')
    expect(off.w.get('[data-testid="view-off"]').attributes('data-feature')).toBe('rules')
    expect(off.w.get('[data-testid="feature-off"]').text()).toContain('rules=off')
    await off.router.push('/indices')
    await flushPromises()
    expect(off.w.get('[data-testid="view-off"]').attributes('data-feature')).toBe('index_manager')
    expect(off.w.get('main h1').text()).toBe('Index Manager')
    expect(mounted).toEqual([]) // neither view was ever set up: none of its queries ran
    await off.router.push('/dlq')
    await flushPromises()
    expect(off.w.find('[data-view="dlq"]').exists()).toBe(true)
    expect(off.w.find('[data-testid="view-off"]').exists()).toBe(false)
    off.w.unmount()

    const on = await shell([], '/rules')
    expect(on.nav).toEqual(expect.arrayContaining(['Index Manager', 'Rules']))
    expect(on.w.find('[data-view="rules"]').exists()).toBe(true)
    expect(on.w.find('[data-testid="view-off"]').exists()).toBe(false)
    on.w.unmount()
  })

  it('the Sources table links a source to the Index Manager only while that view is on', () => {
    const rows = buildSourceRows([{ name: 'metro_raw_content', doc_count: 24 }] as never, [])
    const table = (noIndexLinks: boolean) => mount(SourcesTable, {
      props: { rows, sortKey: 'documents', sortDir: 'desc', noIndexLinks },
      global: { stubs: { RouterLink: { template: '<a data-testid="index-link"><slot /></a>' } } },
    })
    expect(table(false).find('[data-testid="index-link"]').text()).toBe('metro')
    const off = table(true)
    expect(off.find('[data-testid="index-link"]').exists()).toBe(false)
    expect(off.get('tbody th').text()).toContain('metro')
    expect(off.get('tbody th').text()).not.toContain('(no index)')
  })
})
