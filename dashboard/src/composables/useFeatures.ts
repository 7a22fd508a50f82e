import { computed } from 'vue'
import { useQuery } from '@tanstack/vue-query'
import { fetchFeatures } from '@/api/client'
import type { Feature } from '@/lib/features'

/**
 * The dashboard's feature flags (GET /api/features, DASHBOARD_FEATURES).
 * Until they have loaded every feature counts as off: never flash a button
 * or a navigation entry that is then hidden. loaded tells a page whether
 * "off" is known yet.
 */
export function useFeatures() {
  const q = useQuery({ queryKey: ['features'], queryFn: () => fetchFeatures(), staleTime: Infinity, retry: false })
  const flags = computed(() => q.data.value)
  const loaded = computed(() => q.data.value !== undefined)
  const enabled = (f: Feature) => q.data.value?.[f] === true
  return { flags, loaded, enabled }
}
