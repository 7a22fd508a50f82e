// Whether the dashboard server proxies a Prometheus (PROMETHEUS_URL): its
// queries run only then, and their views say so when it does not.
import { computed } from 'vue'
import { useRuntimeConfig } from './useRuntimeConfig'

export function usePrometheus() {
  const { config } = useRuntimeConfig()
  return {
    /** For a query's `enabled`. */
    enabled: computed(() => config.value?.prometheus === true),
    /** The configuration has loaded and names no Prometheus. */
    missing: computed(() => config.value !== undefined && config.value.prometheus !== true),
  }
}
