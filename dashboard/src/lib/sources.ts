// Per-source figures an operator can trust: documents are counted in
// Elasticsearch (one {source}_raw_content and one {source}_classified_content
// index per source), never by adding up classification attempts. The
// classifier's reputation table only supplies the reputation score, the
// average quality and the attempt counts, which are shown as such.
import type { SourceReputation } from '@/types/classifier'
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
): SourceRow[] {
  const rows = new Map<string, SourceRow>()
  const row = (source: string): SourceRow => {
    let r = rows.get(source)
    if (!r) {
      r = {
        source, rawIndex: null, classifiedIndex: null, documents: null, classified: null, failed: null, crime: null,
        attempts: null, failedAttempts: null, reputation: null, averageQuality: null, lastSeen: null,
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
  return [...rows.values()].sort((a, b) => a.source.localeCompare(b.source))
}

function clamp01(x: number): number {
  if (!Number.isFinite(x)) return 0
  return Math.min(1, Math.max(0, x))
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
