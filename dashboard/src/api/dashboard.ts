// The dashboard server's own reads that stand for many service calls
// (dashboard/server/overview.go, lookups.go): the Overview in one request,
// Find in one, every source's priority in one.
import { createHttpClient, type HttpClientOptions } from './http'
import type { ClassificationStats, DeadLetterEntry, DeadLetterStats, SourcePriority } from '@/types/classifier'
import type { OutboxEntry, OutboxStats } from '@/types/publisher'
import type { RangeKey } from '@/lib/timeRange'

/** One service's answer inside a summary: its body, or the status and error it gave (502: it did not answer). */
export interface Part<T> {
  ok: boolean
  status: number
  data?: T
  error?: { code: string; message: string }
}

type Matrix = { metric: Record<string, string>; values: [number, string][] }[]
type Vector = { metric: Record<string, string>; value: [number, string] }[]

export interface OverviewSummary {
  range: RangeKey
  /** The source the per-source parts are narrowed to ('' for every source). */
  source: string
  /** The attempts' bucket in seconds (a round time for the range). */
  bucket_seconds: number
  generated_at: string
  stats: Part<ClassificationStats>
  dlq: Part<DeadLetterStats>
  outbox: Part<OutboxStats>
  classified: Part<{ count: number }>
  metrics: Part<{ queue_depth: number; active_workers: number }>
  /** The history charts' range queries, on the window the server used. */
  history: Part<{ start: number; end: number; step: number; queue: Matrix; dlq: Matrix; outbox: Matrix }>
  throughput: Part<{ classified: Vector; published: Vector }>
}

export interface FindAnswer {
  id: string
  outbox: OutboxEntry[]
  dead_letters: DeadLetterEntry[]
  indices: { index: string; kind: 'raw' | 'classified' }[]
  failures: { service: string; message: string }[]
}

export interface PrioritiesAnswer {
  priorities: Record<string, SourcePriority>
  failures: Record<string, { code: string; message: string }>
}

/** An Alertmanager silence (dashboard/server/silences.go): alertname and the other matchers, each label equal to a value. */
export interface Silence {
  id: string
  alertname: string
  matchers: { name: string; value: string }[]
  starts_at: string
  ends_at: string
  /** Who set it: through the dashboard, the subject of their token. */
  created_by: string
  comment: string
  state: 'active' | 'pending' | 'expired'
}

/** POST /api/alerts/silences: duration (Go syntax, "2h") or ends_at, and why. */
export interface SilenceRequest {
  alertname: string
  matchers?: { name: string; value: string }[]
  duration?: string
  ends_at?: string
  comment: string
}

/** A service as GET /api/health probes it (dashboard/server/health.go). */
export interface ServiceHealth {
  name: 'classifier' | 'publisher' | 'index-manager' | 'prometheus' | 'alertmanager'
  /** up: ready; not_ready: answered another status; down: no answer; not_configured: no URL. */
  state: 'up' | 'not_ready' | 'down' | 'not_configured'
  status: number
  detail?: string
}

/** GET /api/health: each service, and Alertmanager's alerts by what holds them (null counts unless state is ok). */
export interface HealthSummary {
  generated_at: string
  services: ServiceHealth[]
  alerts: {
    state: 'ok' | 'not_configured' | 'unavailable'
    /** Firing alerts no silence or inhibition holds. */
    firing: number | null
    silenced: number | null
    inhibited: number | null
    alertnames: string[]
    detail?: string
  }
}

export function dashboardClient(opts: Omit<HttpClientOptions, 'baseUrl'> & { baseUrl?: string }) {
  const http = createHttpClient({ baseUrl: '/api', ...opts })
  return {
    /** fresh: not the server's few-seconds cache (a page's first load). */
    /** Every panel over range, the per-source ones of source when given. */
    overview: (range: RangeKey, fresh = false, source = '') =>
      http.get<OverviewSummary>('/overview', { range, fresh: fresh ? '1' : undefined, source: source || undefined }),
    find: (id: string) => http.get<FindAnswer>('/find', { id }),
    /** The priority marks of the sources named (one request, however many). */
    sourcePriorities: (sources: string[]) => http.get<PrioritiesAnswer>('/sources/priorities', { source: sources }),
    /** The health strip: services up or down, unsilenced firing alerts (one answer for every user, cached 5 s). */
    health: () => http.get<HealthSummary>('/health'),
    /** Alertmanager's active and pending silences (any role). */
    silences: () => http.get<{ silences: Silence[] }>('/alerts/silences'),
    /** Sets a silence (operator or admin); recorded in the audit log. */
    silence: (req: SilenceRequest) => http.post<Silence>('/alerts/silences', req),
    /** Expires a silence now (operator or admin); recorded in the audit log. */
    expireSilence: (id: string) => http.delete<void>(`/alerts/silences/${encodeURIComponent(id)}`),
  }
}

export type DashboardApi = ReturnType<typeof dashboardClient>
