// Types of the publisher API (publisher/internal/api/handler.go).

export type OutboxStatus = 'pending' | 'publishing' | 'published' | 'failed'

export interface OutboxStats {
  counts: Partial<Record<OutboxStatus, number>>
  failed_retryable: number
  failed_exhausted: number
  avg_publish_lag_seconds: number
  p95_publish_lag_seconds: number
  oldest_pending_age_seconds: number
}

export interface OutboxEntry {
  id: string
  content_id: string
  source: string
  index: string
  content_type: string
  channel: string
  topics: string[]
  quality_score: number
  is_crime_related: boolean
  crime_subcategory: string | null
  title: string
  url: string
  status: OutboxStatus
  retry_count: number
  max_retries: number
  exhausted: boolean
  error_message: string | null
  created_at: string
  updated_at: string
  published_at: string | null
  next_retry_at: string | null
}

/** The filters of the outbox figures: every list filter but status. */
export interface OutboxStatsFilter {
  /** Exact source name. */
  source?: string
  /** Part of a source name, any case. */
  source_contains?: string
  channel?: string
  crime?: boolean
  exhausted?: boolean
}

export interface OutboxFilter extends OutboxStatsFilter {
  status?: OutboxStatus
}

export interface OutboxListParams extends OutboxFilter {
  /** Exact content id; with index, one document's row. */
  content_id?: string
  /** Exact name of the classified index the row came from. */
  index?: string
  cursor?: string
  limit?: number
}

export interface OutboxListResponse {
  entries: OutboxEntry[]
  /** Empty when this is the last page. */
  next_cursor: string
}

export interface OutboxRequeueRequest {
  source?: string
  source_contains?: string
  channel?: string
  crime?: boolean
  exhausted?: boolean
}

export interface ChannelStats {
  channel: string
  published_last_hour: number
  published_last_day: number
  unpublished: number
  last_published_at: string | null
}

export interface ChannelsResponse {
  channels: ChannelStats[]
}
