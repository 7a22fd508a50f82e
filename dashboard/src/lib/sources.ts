// Per-source figures an operator can trust: documents are counted in
// Elasticsearch (one {source}_raw_content and one {source}_classified_content
// index per source), never by adding up classification attempts. The
// classifier's reputation table only supplies the reputation score, the
// average quality and the attempt counts, which are shown as such.
import type { ReprocessTask, SourceReputation, SourceStats } from '@/types/classifier'
import type { IndexSummary } from '@/types/indexManager'

const RAW = '_raw_content'
const CLASSIFIED = '_classified_content'

/** The source of a content index name, or null for any other index. */
export function sourceOfIndex(name: string): { source: string; type: 'raw' | 'classified' } | null {
  if (name.endsWith(RAW) && name.length > RAW.length) return { source: name.slice(0, -RAW.length), type: 'raw' }
  if (name.endsWith(CLASSIFIED) && name.length > CLASSIFIED.length) return { source: name.slice(0, -CLASSIFIED.length), type: 'classified' }
  return null
}

/** Document counts of one source from Elasticsearch searches (size 0). */
export interface SourceCounts {
  /** Raw documents whose classification_status is failed. */
  failed?: number
  /** Classified documents with is_crime_related true. */
  crime?: number
}

export interface SourceRow {
  source: string
  rawIndex: string | null
  classifiedIndex: string | null
  /** Documents in the raw index (null: no raw index). */
  documents: number | null
  /** Documents in the classified index (null: no classified index). */
  classified: number | null
  /** Raw documents marked failed (null: not counted yet). */
  failed: number | null
  crime: number | null
  /** Classification attempts recorded by the classifier (reloads and retries included). */
  attempts: number | null
  failedAttempts: number | null
  /** 0..1. */
  reputation: number | null
  averageQuality: number | null
  lastSeen: string | null
  // From the classifier's GET /sources/stats (null: not answered yet).
  /** Raw documents not classified yet: pending, or being classified. */
  pending: number | null
  /** Documents refused at the door, all reasons. */
  rejected: number | null
  duplicatesUrl: number | null
  duplicatesContent: number | null
  published: number | null
  deadLetters: number | null
  /** Dead letters over processed documents (0..1); null when nothing was processed. */
  dlqRate: number | null
  /** Age in seconds of the oldest pending raw document; null when none is pending. */
  oldestPendingAge: number | null
  /** Raw documents classified now: what a reprocess sets back to pending. */
  reprocessable: number | null
}

/**
 * One row per source: every source with a content index, plus the sources
 * the classifier remembers whose indices are gone. A nameless source (a
 * document without source_name) is never a row.
 */
export function buildSourceRows(
  indices: IndexSummary[],
  reputations: SourceReputation[],
  counts: Record<string, SourceCounts> = {},
  stats: SourceStats[] = [],
): SourceRow[] {
  const rows = new Map<string, SourceRow>()
  const row = (source: string): SourceRow => {
    let r = rows.get(source)
    if (!r) {
      r = {
        source, rawIndex: null, classifiedIndex: null, documents: null, classified: null, failed: null, crime: null,
        attempts: null, failedAttempts: null, reputation: null, averageQuality: null, lastSeen: null,
        pending: null, rejected: null, duplicatesUrl: null, duplicatesContent: null, published: null,
        deadLetters: null, dlqRate: null, oldestPendingAge: null, reprocessable: null,
      }
      rows.set(source, r)
    }
    return r
  }
  for (const idx of indices) {
    const s = sourceOfIndex(idx.name)
    if (!s) continue
    const r = row(s.source)
    if (s.type === 'raw') {
      r.rawIndex = idx.name
      r.documents = idx.doc_count
    } else {
      r.classifiedIndex = idx.name
      r.classified = idx.doc_count
    }
  }
  for (const rep of reputations) {
    if (!rep.source_name.trim()) continue
    const r = row(rep.source_name)
    r.attempts = rep.total_documents
    r.failedAttempts = rep.failed_documents
    r.reputation = clamp01(rep.reputation_score)
    r.averageQuality = rep.average_quality
    r.lastSeen = rep.last_seen_at
  }
  for (const [source, c] of Object.entries(counts)) {
    const r = rows.get(source)
    if (!r) continue
    if (c.failed !== undefined) r.failed = c.failed
    if (c.crime !== undefined) r.crime = c.crime
  }
  // The classifier's figures: processed is the classified index's count,
  // read by one search, so it replaces the index list's count.
  for (const st of stats) {
    if (!st.source.trim()) continue
    const r = row(st.source)
    r.rawIndex ??= st.raw_index
    r.classified = st.processed
    r.failed = st.by_status.failed ?? 0
    r.pending = (st.by_status.pending ?? 0) + (st.by_status.processing ?? 0)
    r.rejected = st.rejected_at_door.total
    r.duplicatesUrl = st.duplicates.url ?? 0
    r.duplicatesContent = st.duplicates.content ?? 0
    r.published = st.published
    r.deadLetters = st.dead_letters
    r.dlqRate = st.dlq_rate
    r.oldestPendingAge = st.oldest_pending_age_seconds
    r.reprocessable = st.by_status.classified ?? 0
  }
  return [...rows.values()].sort((a, b) => a.source.localeCompare(b.source))
}

function clamp01(x: number): number {
  if (!Number.isFinite(x)) return 0
  return Math.min(1, Math.max(0, x))
}

/**
 * The DLQ rate alert's threshold (deploy/prometheus/alerts.yml,
 * DeadLetterRateHighForSource): 0.5% of the documents processed.
 */
export const DLQ_RATE_ALERT = 0.005

/** Refusal reasons of a source, most frequent first (ties by name). */
export function refusalReasons(stats: SourceStats | undefined): { field: string; count: number }[] {
  return Object.entries(stats?.rejected_at_door.by_field ?? {})
    .map(([field, count]) => ({ field, count }))
    .sort((a, b) => b.count - a.count || a.field.localeCompare(b.field))
}

/**
 * Where a source's dead-letter count links: the DLQ view filtered by the
 * source's raw index, as GET /sources/stats counts dead_letters, so the
 * list holds every entry counted (those recorded without a source name
 * too, which a filter by source name cannot list); code narrows it to one
 * error code.
 */
export function deadLettersLink(stats: Pick<SourceStats, 'raw_index'>, code?: string): { name: 'dlq'; query: Record<string, string> } {
  return { name: 'dlq', query: code ? { index: stats.raw_index, code } : { index: stats.raw_index } }
}

/** Reputation tone on its 0..1 scale. */
export function reputationTone(score: number): 'success' | 'warning' | 'danger' {
  return score >= 0.7 ? 'success' : score >= 0.4 ? 'warning' : 'danger'
}

export type SortDir = 'asc' | 'desc'

/**
 * Sorts rows by a key; nulls always last, ties by the first key's
 * natural order kept stable by the source name.
 */
export function sortRows<T extends object>(rows: T[], key: keyof T, dir: SortDir, tieKey?: keyof T): T[] {
  const sign = dir === 'asc' ? 1 : -1
  return [...rows].sort((a, b) => {
    const x = a[key]
    const y = b[key]
    if (x === y) return tieKey ? String(a[tieKey]).localeCompare(String(b[tieKey])) : 0
    if (x === null || x === undefined) return 1
    if (y === null || y === undefined) return -1
    if (typeof x === 'number' && typeof y === 'number') return sign * (x - y)
    return sign * String(x).localeCompare(String(y))
  })
}

/** Why a reprocess request was refused, in the operator's words (the service's own message kept). */
export function reprocessRefusal(status: number, message: string): string {
  switch (status) {
    case 409: return `Refused, one is running already: ${message}`
    case 429: return `This classifier runs as many reprocess tasks as it may; try again in a minute (${message})`
    case 404: return `Nothing to reprocess: ${message}`
    case 0: return `The dashboard could not reach the classifier: ${message}`
    default: return `The classifier refused the reprocess (${status}): ${message}`
  }
}

/** A reprocess task's state in a line; estimate is the documents it was expected to touch. */
/** Where a reprocess is: setting documents back to pending, classifying them again, done, or stopped. */
export type ReprocessPhase = 'requeueing' | 'classifying' | 'done' | 'stopped'

export function reprocessPhase(status: ReprocessTask['status'], pendingNow: number | null): ReprocessPhase {
  if (status === 'running') return 'requeueing'
  if (status !== 'completed') return 'stopped'
  return pendingNow === 0 ? 'done' : 'classifying'
}

/**
 * A reprocess in words, to its end: once its documents are back to pending
 * (completed), pendingNow (the source's documents still pending, when known)
 * says how far their classification has come.
 */
export function reprocessSummary(
  task: Pick<ReprocessTask, 'status' | 'requeued' | 'conflicts' | 'errors' | 'error'>,
  estimate: number | null,
  pendingNow: number | null = null,
): string {
  const n = formatCount(task.requeued)
  const docs = `${n} document${task.requeued === 1 ? '' : 's'}`
  const skipped = task.conflicts + task.errors > 0
    ? ` (${formatCount(task.conflicts)} changed meanwhile, ${formatCount(task.errors)} refused by Elasticsearch)`
    : ''
  switch (task.status) {
    case 'running': return estimate !== null && estimate >= task.requeued
      ? `Setting documents back to pending: ${n} of about ${formatCount(estimate)}`
      : `Setting documents back to pending: ${n} so far`
    case 'completed':
      if (pendingNow === 0) return `${docs} set back to pending${skipped} and classified again`
      if (pendingNow !== null) return `${docs} set back to pending${skipped}; being classified again at low priority: ${formatCount(pendingNow)} still pending`
      return `${docs} set back to pending${skipped}; classified again at low priority`
    case 'failed': return `Reprocess failed after ${docs}: ${task.error ?? 'no reason given'}`
    case 'abandoned': return `Reprocess abandoned after ${n} (its classifier stopped); start it again to finish`
    case 'cancelled': return `Reprocess cancelled after ${docs} set back to pending (they are classified again); start it again to finish`
  }
}

const formatCount = (n: number) => new Intl.NumberFormat('en-US').format(n)

/** The Sources table's figure columns (the name and actions always show). */
export interface SourceColumn { key: keyof SourceRow; label: string; title?: string; right?: boolean }
export const SOURCE_COLUMNS: SourceColumn[] = [
  { key: 'documents', label: 'Documents', title: 'Documents in the raw index', right: true },
  { key: 'pending', label: 'Pending', title: 'Raw documents not classified yet: pending, or being classified', right: true },
  { key: 'classified', label: 'Processed', title: 'Documents classified at least once (the classified index)', right: true },
  { key: 'published', label: 'Published', title: 'Documents published at least once', right: true },
  { key: 'rejected', label: 'Rejected', title: 'Documents refused at the door; the details give the reasons', right: true },
  { key: 'duplicatesUrl', label: 'URL dups', title: 'Classified documents recorded as duplicates of an earlier URL', right: true },
  { key: 'duplicatesContent', label: 'Content dups', title: 'Classified documents recorded as copies of an earlier text', right: true },
  { key: 'dlqRate', label: 'DLQ rate', title: 'Documents in the dead-letter queue over those processed', right: true },
  { key: 'oldestPendingAge', label: 'Oldest pending', title: 'Age of the oldest raw document still pending', right: true },
  { key: 'failed', label: 'Failed', title: 'Raw documents marked failed', right: true },
  { key: 'crime', label: 'Crime', title: 'Classified documents found crime-related', right: true },
  { key: 'reputation', label: 'Reputation (0–1)' },
  { key: 'averageQuality', label: 'Avg quality', right: true },
  { key: 'attempts', label: 'Attempts', title: 'Classification attempts, reloads and retries included', right: true },
  { key: 'lastSeen', label: 'Last classified' },
]

/** One figure of a reprocess run, as its history lists it. */
export interface RunFigure {
  key: 'scanned' | 'requeued' | 'conflicts' | 'errors' | 'reclassified' | 'topics_changed'
  label: string
  value: number
}

/**
 * A reprocess run's figures, in the order they happen: read, set back to
 * pending, left alone, refused; then what its documents became: classified
 * again, and of those with other topics than before. Refusals show only
 * when there were any.
 */
export function reprocessRunFigures(task: Pick<ReprocessTask, 'scanned' | 'requeued' | 'conflicts' | 'errors' | 'reclassified' | 'topics_changed'>): RunFigure[] {
  const figures: RunFigure[] = [
    { key: 'scanned', label: 'Scanned', value: task.scanned },
    { key: 'requeued', label: 'Requeued', value: task.requeued },
    { key: 'conflicts', label: 'Conflicts', value: task.conflicts },
    { key: 'errors', label: 'Refused', value: task.errors },
    { key: 'reclassified', label: 'Classified again', value: task.reclassified },
    { key: 'topics_changed', label: 'Topics changed', value: task.topics_changed },
  ]
  return figures.filter((f) => f.key !== 'errors' || f.value > 0)
}

/** A run's status as a badge tone. */
export function reprocessTone(status: ReprocessTask['status']): 'success' | 'info' | 'warning' | 'danger' {
  switch (status) {
    case 'completed': return 'success'
    case 'running': return 'info'
    case 'cancelled': return 'warning'
    default: return 'danger'
  }
}
