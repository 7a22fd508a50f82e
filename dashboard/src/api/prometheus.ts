// Prometheus's query API through the dashboard server's bounded proxy
// (dashboard/server/prometheus.go): the history of the services' gauges,
// and the alerts its rules hold.
import { createHttpClient, type HttpClient, type HttpClientOptions } from './http'

export const PROMETHEUS_ROOT = '/api/prometheus/api/v1'

export interface RangeResult {
  status: 'success' | 'error'
  data: { resultType: 'matrix'; result: { metric: Record<string, string>; values: [number, string][] }[] }
}

/** One alert of Prometheus's rules, pending (its `for` not yet over) or firing. */
export interface PromAlert {
  labels: Record<string, string>
  annotations: Record<string, string>
  state: 'pending' | 'firing'
  activeAt?: string
  value?: string
}

export interface AlertsResult {
  status: 'success'
  data: { alerts: PromAlert[] }
}

export interface InstantResult {
  status: 'success' | 'error'
  data: { resultType: 'vector'; result: { metric: Record<string, string>; value: [number, string] }[] }
}

/**
 * The queries one user may have in flight through the proxy
 * (DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT_PER_USER's default): a page sends at
 * most this many at once and queues the rest, so its own panels never make
 * each other busy. Another tab of the same user, or a server with a lower
 * cap, can still get 429, which the query client retries (queryClient.ts).
 */
export const PROMETHEUS_MAX_IN_FLIGHT = 2

/** Runs the calls given at most limit at a time, the others in their order of arrival. */
export function limiter(limit: number) {
  let running = 0
  const waiting: (() => void)[] = []
  return async <T>(call: () => Promise<T>): Promise<T> => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve))
    else running++
    try {
      return await call()
    } finally {
      const next = waiting.shift()
      if (next) next()
      else running--
    }
  }
}

export function createPrometheusApi(http: HttpClient, maxInFlight = PROMETHEUS_MAX_IN_FLIGHT) {
  const limit = limiter(maxInFlight)
  return {
    /** An instant query, evaluated now. */
    query: (query: string) => limit(() => http.get<InstantResult>('/query', { query })),
    /** The alerts Prometheus's rules hold now. */
    alerts: () => limit(() => http.get<AlertsResult>('/alerts')),
    /** start and end in Unix seconds, step in seconds. */
    queryRange: (query: string, start: number, end: number, step: number) =>
      limit(() => http.get<RangeResult>('/query_range', { query, start: String(start), end: String(end), step: String(step) })),
  }
}

export type PrometheusApi = ReturnType<typeof createPrometheusApi>

export function prometheusClient(opts: Omit<HttpClientOptions, 'baseUrl'> & { baseUrl?: string }): PrometheusApi {
  return createPrometheusApi(createHttpClient({ baseUrl: PROMETHEUS_ROOT, ...opts }))
}
