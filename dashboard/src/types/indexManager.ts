// Types of the index-manager API (checked against
// index-manager/internal/openapi/openapi.yaml).

import type { Role } from './audit'

export type IndexType = 'raw_content' | 'classified_content' | 'other'

export interface IndexSummary {
  name: string
  /** green, yellow, red; empty for a closed index. */
  health: 'green' | 'yellow' | 'red' | ''
  status: 'open' | 'close'
  doc_count: number
  storage_size: string
  storage_bytes: number
  primary_count: number
  replica_count: number
  created_at: string
  index_type: IndexType
}

export interface IndexListResponse {
  indices: IndexSummary[]
  total: number
}

export interface IndexDetail {
  name: string
  health: string
  status: string
  index_type: IndexType
  settings: Record<string, unknown>
  mappings: Record<string, unknown>
  stats: IndexStats
  aliases: string[]
}

export interface IndexStats {
  doc_count: number
  deleted_docs: number
  storage_size: string
  storage_bytes: number
  primary_shards: number
  replica_shards: number
  indexing_rate: number
  search_rate: number
}

export interface DocumentQueryRequest {
  query: Record<string, unknown>
  size?: number
  from?: number
  sort?: SortField[]
  _source?: string[]
  highlight?: Record<string, unknown>
  /** The last hit's sort values: the page after it. */
  search_after?: unknown[]
  aggs?: Record<string, unknown>
}

export interface SortField {
  field: string
  order: 'asc' | 'desc'
}

export interface DocumentQueryResponse {
  total: number
  max_score: number
  hits: DocumentHit[]
  took_ms: number
  /** Present on the documents endpoint when more documents may follow. */
  next_cursor?: string
  /** Elasticsearch's results of the request's aggs. */
  aggregations?: Record<string, unknown>
}

export interface DocumentHit {
  _id: string
  _score: number
  _source: Record<string, unknown>
  highlight?: Record<string, string[]>
  /** The hit's sort values when the search was sorted. */
  sort?: unknown[]
}

/** The mapping is always the shipped one of the index type; the service refuses mappings. */
export interface CreateIndexRequest {
  name: string
  /** Only number_of_shards (1-8), number_of_replicas (0-3) and refresh_interval (1s-5m). */
  settings?: Record<string, number | string>
}

export interface AckResponse {
  acknowledged: boolean
  index: string
  index_type?: IndexType
}

export interface LoginRequest {
  username: string
  password: string
}

export interface LoginResponse {
  token: string
  token_type: 'Bearer'
  expires_at: string
  /** The role the token carries (docs/roles.md). */
  role: Role
  /** Buys the next access token (POST /auth/refresh) until session_expires_at. */
  refresh_token: string
  session_id: string
  session_expires_at: string
}

export type { AuditEntry, AuditFilter, AuditListResponse, AuditOutcome, Role } from './audit'

/** GET /auth/me: who the token names and its role. */
export interface MeResponse {
  user: string
  role: Role
  /**
   * False when message bodies (raw_text, raw_html, body) are hidden from
   * this user (a viewer under VIEWER_MESSAGE_BODIES=hide); absent from an
   * older index-manager, which shows bodies to everyone.
   */
  reads_bodies?: boolean
}

export interface DocumentListParams {
  size?: number
  cursor?: string
}

/** An alias and the index it points at (GET /aliases). */
export interface IndexAlias {
  alias: string
  index: string
}

export interface AliasListResponse {
  aliases: IndexAlias[]
  total: number
}

/** The answer to PUT or DELETE /indices/{name}/aliases/{alias}. */
export interface AliasResponse {
  acknowledged: boolean
  index: string
  alias: string
}

/** A force merge started in the background (202 of POST /indices/{name}/_forcemerge). */
export interface ForceMergeResponse {
  acknowledged: boolean
  index: string
  /** The task GET /tasks/{task} follows. */
  task: string
  /** Deleted documents the index held before the merge. */
  deleted_docs: number
}

/** A force merge's state (GET /tasks/{task}). */
export interface TaskStatus {
  task: string
  action: string
  completed: boolean
  running_ms: number
  error?: string
}

/** GET /content/_count: every open {prefix}*_{index_type} index, optionally bounded by a date field. */
export interface ContentCountParams {
  index_type: 'raw_content' | 'classified_content'
  prefix?: string
  field?: 'crawled_at' | 'published_date' | 'classified_at'
  /** Date math (now-1h) or an RFC 3339 time; required with field. */
  gte?: string
}

export interface ContentCountResponse {
  index_type: 'raw_content' | 'classified_content'
  pattern: string
  prefix?: string
  field?: string
  gte?: string
  count: number
}
