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

export function createPrometheusApi(http: HttpClient) {
  return {
    /** An instant query, evaluated now. */
    query: (query: string) => http.get<InstantResult>('/query', { query }),
    /** The alerts Prometheus's rules hold now. */
    alerts: () => http.get<AlertsResult>('/alerts'),
    /** start and end in Unix seconds, step in seconds. */
    queryRange: (query: string, start: number, end: number, step: number) =>
      http.get<RangeResult>('/query_range', { query, start: String(start), end: String(end), step: String(step) }),
  }
}

export type PrometheusApi = ReturnType<typeof createPrometheusApi>

export function prometheusClient(opts: Omit<HttpClientOptions, 'baseUrl'> & { baseUrl?: string }): PrometheusApi {
  return createPrometheusApi(createHttpClient({ baseUrl: PROMETHEUS_ROOT, ...opts }))
}
