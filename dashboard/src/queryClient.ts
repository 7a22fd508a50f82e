import { MutationCache, QueryCache, QueryClient } from '@tanstack/vue-query'
import { ApiError } from '@/api/http'

/** How often a query answered 429 (busy: a cap of queries in flight) is tried again before it shows the error. */
export const BUSY_RETRIES = 6

/**
 * Retries transient failures, never a 4xx answer (a 401 least of all) but
 * 429: the server was busy (the Prometheus proxy's per-user or global cap of
 * queries in flight), so the same request succeeds a moment later.
 */
export function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && error.isBusy) return failureCount < BUSY_RETRIES
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) return false
  return failureCount < 2
}

/**
 * The wait before retry number failureCount + 1: what a 429's Retry-After
 * asks (at least 1 s), doubled on each busy answer up to 30 s with jitter so
 * the panels of a page do not come back all at once; otherwise TanStack
 * Query's own backoff (1 s, 2 s, 4 s ... at most 30 s).
 */
export function retryDelay(failureCount: number, error: unknown, random = Math.random): number {
  const backoff = Math.min(1000 * 2 ** failureCount, 30_000)
  if (error instanceof ApiError && error.isBusy) {
    const base = Math.max(1000, (error.retryAfter ?? 1) * 1000)
    return Math.min(base * 2 ** failureCount, 30_000) * (0.75 + random() * 0.5)
  }
  return backoff
}

export function createQueryClient(onUnauthorized: () => void): QueryClient {
  const on401 = (error: unknown) => {
    if (error instanceof ApiError && error.isUnauthorized) onUnauthorized()
  }
  return new QueryClient({
    queryCache: new QueryCache({ onError: on401 }),
    mutationCache: new MutationCache({ onError: on401 }),
    defaultOptions: {
      queries: { retry: shouldRetry, retryDelay: (n, e) => retryDelay(n, e), staleTime: 5_000, refetchOnWindowFocus: true },
      mutations: { retry: false },
    },
  })
}
