// Types of the classifier API: rules, the playground, dry-run classification
// (classifier/internal/api), the dead-letter queue, sources and statistics.

export interface Rule {
  id: number
  name: string
  topic: string
  keywords: string[]
  min_confidence: number
  priority: number
  enabled: boolean
  /** Distinct keywords the rule must find to match (0: the spec's min_confidence threshold). */
  min_keywords?: number
  /**
   * The one threshold that decides the rule under the live engine's scoring
   * (rules.Rule.Threshold): min_keywords when it is above zero and the
   * engine scores with min_keywords, otherwise min_confidence.
   */
  threshold?: RuleThreshold
  /** What the rule does to its topic once it passes (absent from an older service: support). */
  effect?: RuleEffect
  seed?: string
  created_at: string
  updated_at: string
}

export type RuleThreshold = 'min_keywords' | 'min_confidence'

/**
 * What a passing rule does to its topic (rules.Effect): support adds its
 * keywords as evidence, exclude vetoes the topic for the document (the topic
 * crime vetoes every crime subcategory), override makes the topic primary
 * whatever the model says (an exclude rule still wins).
 */
export type RuleEffect = 'support' | 'exclude' | 'override'

export interface RuleInput {
  name: string
  topic: string
  keywords: string[]
  min_confidence?: number
  priority?: number
  enabled?: boolean
  /** Omitted: a new rule gets 0, an updated rule keeps its value. */
  min_keywords?: number
  /** Omitted: a new rule supports its topic, an updated rule keeps its effect. */
  effect?: RuleEffect
}

export interface RuleListResponse {
  rules: Rule[]
  total: number
}

export interface RuleFilter {
  topic?: string
  enabled?: boolean
}

export interface RuleTestRequest {
  title?: string
  body?: string
  text?: string
}

export interface Highlight {
  keyword: string
  field: 'title' | 'body' | 'text'
  /** UTF-16 offsets (String.prototype.slice), end exclusive. */
  start: number
  end: number
  byte_start: number
  byte_end: number
  text: string
}

export interface RuleMatch {
  rule_id: number
  rule_name: string
  topic: string
  priority: number
  min_confidence: number
  effect?: RuleEffect
  score: number
  coverage: number
  hits: number
  unique_matches: number
  matched_keywords: string[]
  highlights: Highlight[]
}

/** A rule that found at least one keyword, matched or not, and why. */
export interface RuleExplanation {
  rule_id: number
  rule_name: string
  topic: string
  priority: number
  effect?: RuleEffect
  matched: boolean
  /** The spec's score and the rule's threshold on it. */
  score: number
  min_confidence: number
  min_keywords: number
  /** What decided the match under the engine's scoring. */
  threshold: 'min_keywords' | 'min_confidence'
  keywords_found: string[]
  /** Distinct keywords of the rule. */
  keywords: number
  /** Distinct keywords the rule must find (keywords + 1 when none suffice). */
  keywords_needed: number
  /** How many more it needed; 0 when it matched. */
  keywords_missing: number
  reason: string
  highlights: Highlight[]
}

export interface EngineInfo {
  matcher: string
  stemming: boolean
  scoring: 'min_keywords' | 'spec'
}

export interface RuleTestResponse {
  matches: RuleMatch[]
  /** Every rule that scored above zero, in the order of matches. */
  explanations?: RuleExplanation[]
  engine?: EngineInfo
  /** The topics the rules decide alone, effects applied: none an exclude rule vetoed. */
  topics: string[]
  is_crime_related: boolean
  crime_subcategory: string | null
  /** Topics matched exclude rules vetoed, each with the first rule that did (crime: every crime subcategory). */
  vetoed?: RuleVeto[]
  /** The matched override rule whose topic comes first. */
  overridden_by?: string
  rules_version?: number
}

export interface RuleVeto {
  topic: string
  vetoed_by: string
}

export interface ClassifyResponse {
  document: Record<string, unknown>
  rules_version?: number
}

export interface DeadLetterEntry {
  id: string
  content_id: string
  source_name: string
  index_name: string
  error_message: string
  error_code: string
  retry_count: number
  max_retries: number
  next_retry_at: string | null
  created_at: string
  last_attempt_at: string | null
  exhausted: boolean
  /** Consecutive identical failures; at the classifier's limit the entry is made permanent. */
  failure_streak?: number
  permanent?: boolean
  /** Why the entry is permanent, e.g. "failed 3 times in a row with RULE_PANIC: …". */
  permanent_reason?: string | null
  permanent_at?: string | null
  /**
   * What the door decided (seed 004), on a VALIDATION_ERROR entry: "refuse",
   * false, and the reason (a URL class's, or the refused field's).
   */
  processing_strategy?: string
  is_processable?: boolean
  failure_reason?: string
  /** False when the error code is permanent (VALIDATION_ERROR, NOT_FOUND): the classifier refuses its retry. */
  retryable?: boolean
  /** Why it is not retried; null when it is retryable. */
  retry_refusal?: string | null
}

export interface DeadLetterFilter {
  source?: string
  /** Only the entries recorded without a source name (an empty source means any). */
  no_source?: boolean
  error_code?: string
  exhausted?: boolean
  /**
   * Exact name of the raw index the entries came from: a source's entries as
   * GET /sources/stats counts its dead_letters, those without a source name
   * included (with content_id, one document's entries).
   */
  index?: string
}

export interface DeadLetterListParams extends DeadLetterFilter {
  /** Exact content id; with index, one document's entries. */
  content_id?: string
  cursor?: string
  limit?: number
}

export interface DeadLetterListResponse {
  entries: DeadLetterEntry[]
  next_cursor: string | null
}

export interface DeadLetterStats {
  pending: number
  exhausted: number
  ready: number
  avg_retries: number
  oldest_entry: string | null
  by_source: Record<string, number>
  by_error_code: Record<string, number>
}

export interface RequeueResponse {
  requeued: number
}

/** One failure of a dead letter's document: its first (retry 0) or its n-th retry. */
export interface DeadLetterAttempt {
  at: string
  error_code: string
  error_message: string
  retry: number
}

/** GET /dlq/{id}/attempts: oldest first, the last `kept` of them. */
export interface DeadLetterAttempts {
  id: string
  kept: number
  attempts: DeadLetterAttempt[]
}

/** POST /dlq/requeue: the entries re-queued, and those skipped because their error code is permanent. */
export interface BulkRequeueResponse extends RequeueResponse {
  skipped: number
  skipped_by_code: Record<string, number>
  skipped_reason: string | null
}

export interface SourceReputation {
  source_name: string
  total_documents: number
  classified_documents: number
  failed_documents: number
  crime_documents: number
  average_quality: number
  reputation_score: number
  first_seen_at: string | null
  last_seen_at: string | null
}

export interface SourceListResponse {
  sources: SourceReputation[]
}

/** The poller's view of one raw index (GET /api/v1/sources/poll-status). */
export interface IndexPollStatus {
  index: string
  failing: boolean
  /** mapping, search_error or write_blocked while failing. */
  reason_code?: string
  reason?: string
  since: string
  next_retry?: string
  consecutive_failures?: number
}

export interface PollStatusResponse {
  indices: IndexPollStatus[]
  failing: number
}

export interface ClassificationStats {
  total: number
  per_interval: { bucket: string; count: number }[]
  by_topic: Record<string, number>
  by_source: Record<string, number>
}

/**
 * One source's figures (GET /api/v1/sources/stats): documents, never
 * attempts. A source is the prefix of its raw index, {source}_raw_content.
 */
export interface SourceStats {
  source: string
  raw_index: string
  /** Documents in the classified index: classified at least once. */
  processed: number
  /** Raw documents by classification_status (pending, processing, classified, failed). */
  by_status: Record<string, number>
  /** Documents refused at the door, by the raw field refused (url, id, raw_text, document, …). */
  rejected_at_door: { total: number; by_field: Record<string, number> }
  /**
   * Documents by processing strategy (seed 004): standard and metadata_only
   * from the classified index, refuse from the refusals at the door.
   */
  by_strategy?: Record<string, number>
  /** Classified documents recorded as duplicates, by kind (url, content). */
  duplicates: Record<string, number>
  /** Documents published at least once. */
  published: number
  /** The source's documents in the dead-letter queue. */
  dead_letters: number
  /** dead_letters / processed; null when nothing was processed. */
  dlq_rate: number | null
  oldest_pending_crawled_at: string | null
  oldest_pending_age_seconds: number | null
}

export interface SourceStatsResponse {
  sources: SourceStats[]
  /** Some shards did not answer: the Elasticsearch figures of their indices may be low. */
  partial: boolean
  generated_at: string
}

/** The five levels, highest first: critical 100, high 80, normal 50, low 20, cleanup 10. */
export type SourcePriorityLevel = 'critical' | 'high' | 'normal' | 'low' | 'cleanup'

/** A source's priority mark (GET/PUT /api/v1/sources/{name}/priority); never marked: normal, updated_at null. */
export interface SourcePriority {
  source: string
  priority: SourcePriorityLevel
  updated_by: string
  updated_at: string | null
}

export interface ReprocessRequest {
  /** classified (the default): the classified documents; all: classified and failed. */
  scope?: 'classified' | 'all'
  max_docs?: number
}

/**
 * A reprocess request (POST /api/v1/sources/{name}/reprocess): the source's
 * raw documents set back to pending at low priority, in the background.
 */
export interface ReprocessTask {
  id: string
  source: string
  raw_index: string
  scope: 'classified' | 'all'
  max_docs: number | null
  /** abandoned: its replica stopped moving it for 5 minutes; request again to finish. cancelled: by an operator. */
  status: 'running' | 'completed' | 'failed' | 'abandoned' | 'cancelled'
  /** Documents read. */
  scanned: number
  /** Documents set back to pending with priority low. */
  requeued: number
  /** Documents left alone because they changed since they were read. */
  conflicts: number
  /** Documents Elasticsearch refused to change. */
  errors: number
  /** Of the requeued documents, those classified again since (grows after the task ends). */
  reclassified: number
  /** Of the reclassified documents, those whose topic set differs from their previous classification's. */
  topics_changed: number
  error: string | null
  replica: string
  requested_by: string
  started_at: string
  updated_at: string
  finished_at: string | null
  /** Who asked to cancel the task, and when (POST .../cancel); the task ends after its current page. */
  cancel_requested_by: string | null
  cancel_requested_at: string | null
}

export interface ReprocessTaskList {
  tasks: ReprocessTask[]
  /** Continues the list (older runs); null on the last page. */
  next_cursor: string | null
}

/** Why a document is offered for a label (GET /api/v1/labels/candidates). */
export type LabelReason = 'no_topic' | 'low_confidence' | 'disputed'

/** A classified document worth an operator's label. */
export interface LabelCandidate {
  /** The raw index the document came from (what POST /labels names). */
  index: string
  id: string
  title: string
  /** The first 300 characters of the document's text. */
  snippet: string
  /** The topic the classifier decided; "" when it found none. */
  primary_topic: string
  confidence: number
  topics: string[]
  reason: LabelReason
}

export interface LabelCandidatesResponse {
  candidates: LabelCandidate[]
  /** The topics an operator may choose from. */
  topics_available: string[]
}

/** An operator's label of one document (POST /api/v1/labels answers it). */
export interface TopicLabel {
  id: number
  /** The raw index. */
  index: string
  content_id: string
  label: string
  title: string
  /** What the classifier had decided when the label was given ("" for no topic). */
  predicted_topic: string
  predicted_confidence: number
  labelled_by: string
  labelled_at: string
}

export interface LabelInput {
  index: string
  id: string
  label: string
}

export interface LabelListResponse {
  labels: TopicLabel[]
  total: number
  per_label: Record<string, number>
}

/** The classifier's decisions at labelling time measured against one topic's labels. */
export interface LabelTopicStats {
  topic: string
  labelled: number
  predicted: number
  correct: number
  precision: number
  recall: number
}

export interface LabelWeek {
  /** The week's first day, YYYY-MM-DD. */
  week: string
  labelled: number
  correct: number
}

export interface LabelStats {
  labelled: number
  topics: LabelTopicStats[]
  /** confusion[label][predicted topic, or "none"] = labels. */
  confusion: Record<string, Record<string, number>>
  weeks: LabelWeek[]
}

/** A stored topic model (GET /api/v1/models). */
export interface TopicModelSummary {
  id: number
  name: string
  status: string
  rollout_percent: number
  topics: string[]
  terms: number
  trained_on?: Record<string, unknown> | null
  scores?: unknown
  created_by?: string
  created_at: string
  status_at?: string
}

export interface TopicModelListResponse {
  models: TopicModelSummary[]
  serving?: { active_model_id: number; candidate_model_id: number; rollout_percent: number }
}
