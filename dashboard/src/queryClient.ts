import { MutationCache, QueryCache, QueryClient } from '@tanstack/vue-query'
import { ApiError } from '@/api/http'

/** Retries transient failures, never a 4xx answer (a 401 least of all). */
export function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) return false
  return failureCount < 2
}

export function createQueryClient(onUnauthorized: () => void): QueryClient {
  const on401 = (error: unknown) => {
    if (error instanceof ApiError && error.isUnauthorized) onUnauthorized()
  }
  return new QueryClient({
    queryCache: new QueryCache({ onError: on401 }),
    mutationCache: new MutationCache({ onError: on401 }),
    defaultOptions: {
      queries: { retry: shouldRetry, staleTime: 5_000, refetchOnWindowFocus: true },
      mutations: { retry: false },
    },
  })
}
