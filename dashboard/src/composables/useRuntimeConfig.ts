import { computed } from 'vue'
import { useQuery } from '@tanstack/vue-query'
import { fetchRuntimeConfig } from '@/api/client'

/** The dashboard server's runtime configuration; read_only hides destructive actions. */
export function useRuntimeConfig() {
  const q = useQuery({
    queryKey: ['runtime-config'],
    queryFn: () => fetchRuntimeConfig(),
    staleTime: Infinity,
    retry: false,
  })
  // Until the configuration has loaded, act read-only: never flash a
  // destructive button that the configuration then hides.
  const readOnly = computed(() => q.data.value?.read_only ?? true)
  return { readOnly, config: q.data }
}
