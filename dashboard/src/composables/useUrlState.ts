// View state (filters, sort, selection, open detail) kept in the URL's
// query, so every view can be linked, bookmarked and reloaded as it was.
// Defaults are left out of the URL; changes replace the history entry. The
// value is held locally too, so typing is never slowed by navigation, and
// changes made together are written in one navigation.
import { computed, ref, watch, type Ref } from 'vue'
import { useRoute, useRouter, type LocationQuery, type Router } from 'vue-router'

interface Writer {
  pending: Map<string, string | null>
  inflight: number
  scheduled: boolean
}
const writers = new WeakMap<Router, Writer>()

function writerOf(router: Router): Writer {
  let w = writers.get(router)
  if (!w) {
    w = { pending: new Map(), inflight: 0, scheduled: false }
    writers.set(router, w)
  }
  return w
}

function write(router: Router, key: string, value: string | null) {
  const w = writerOf(router)
  w.pending.set(key, value)
  if (w.scheduled) return
  w.scheduled = true
  queueMicrotask(() => {
    w.scheduled = false
    const query: LocationQuery = { ...router.currentRoute.value.query }
    for (const [k, v] of w.pending) {
      if (v === null) delete query[k]
      else query[k] = v
    }
    w.pending.clear()
    w.inflight++
    void router.replace({ query }).finally(() => { w.inflight-- })
  })
}

export function useUrlState(key: string, fallback = ''): Ref<string> {
  const route = useRoute()
  const router = useRouter()
  const w = writerOf(router)
  const fromRoute = () => {
    const v = route.query[key]
    const s = Array.isArray(v) ? v[0] : v
    return typeof s === 'string' ? s : fallback
  }
  const value = ref(fromRoute())
  const routeName = route.name
  // Navigation from elsewhere (a link, back/forward) updates the value; our
  // own writes in flight do not echo back.
  watch(() => route.query[key], () => {
    if (route.name !== routeName || w.inflight > 0 || w.pending.has(key)) return
    if (fromRoute() !== value.value) value.value = fromRoute()
  })
  watch(value, (v) => {
    if (route.name !== routeName) return
    write(router, key, v === fallback || v === '' ? null : v)
  })
  return value
}

/** A sort in the URL as "key" or "-key" (descending). */
export function useUrlSort<K extends string>(key: string, fallback: { key: K; dir: 'asc' | 'desc' }) {
  const raw = useUrlState(key, `${fallback.dir === 'desc' ? '-' : ''}${fallback.key}`)
  const sortKey = computed(() => raw.value.replace(/^-/, '') as K)
  const sortDir = computed<'asc' | 'desc'>(() => (raw.value.startsWith('-') ? 'desc' : 'asc'))
  function sortBy(k: K, firstDir: 'asc' | 'desc' = 'asc') {
    const dir = sortKey.value === k ? (sortDir.value === 'asc' ? 'desc' : 'asc') : firstDir
    raw.value = `${dir === 'desc' ? '-' : ''}${k}`
  }
  return { sortKey, sortDir, sortBy }
}

/**
 * A list of names in the URL, comma-separated and without repeats: for
 * names that never hold a comma, such as index names (a selection).
 */
export function useUrlList(key: string) {
  const raw = useUrlState(key)
  return computed<string[]>({
    get: () => (raw.value ? [...new Set(raw.value.split(',').filter(Boolean))] : []),
    set: (names) => { raw.value = [...new Set(names)].join(',') },
  })
}
