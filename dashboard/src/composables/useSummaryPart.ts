// One card's share of the Overview summary (GET /api/overview), shaped as
// the parts of a TanStack query a figure reads: its last good data, when it
// arrived, and its error (the summary's own, or the service's part), so a
// service that is down shows as unavailable with its last good time while
// the other cards stand, as when each card had its own query.
import { computed, ref, shallowRef, watch, type Ref } from 'vue'
import type { UseQueryReturnType } from '@tanstack/vue-query'
import { ApiError } from '@/api/http'
import type { OverviewSummary, Part } from '@/api/dashboard'

export function partError(p: Part<unknown>): ApiError {
  const code = p.error?.code ?? `http_${p.status}`
  return new ApiError(p.status, code, p.error?.message ?? `HTTP ${p.status}`)
}

export function useSummaryPart<T>(summary: UseQueryReturnType<OverviewSummary, Error>, pick: (s: OverviewSummary) => Part<T>) {
  const data = shallowRef<T | undefined>()
  const dataUpdatedAt = ref(0)
  const part = computed(() => (summary.data.value ? pick(summary.data.value) : undefined))
  watch(() => summary.dataUpdatedAt.value, () => {
    const p = part.value
    if (p?.ok) {
      data.value = p.data
      dataUpdatedAt.value = summary.dataUpdatedAt.value
    }
  }, { immediate: true })
  const error = computed<Error | null>(() => summary.error.value ?? (part.value && !part.value.ok ? partError(part.value) : null))
  return {
    data: data as Readonly<Ref<T | undefined>>,
    dataUpdatedAt,
    error,
    isPending: computed(() => data.value === undefined),
    isLoading: computed(() => data.value === undefined && !error.value),
    isFetching: summary.isFetching,
    failureReason: summary.failureReason,
    refetch: () => summary.refetch(),
  }
}

export type SummaryPart<T> = ReturnType<typeof useSummaryPart<T>>
