// What became of a dead-letter entry re-queued for a retry, read from the
// entry as the queue holds it afterwards; and how many entries a filter
// matches, counted page by page when the queue's figures cannot say.
import type { DeadLetterEntry, DeadLetterFilter, DeadLetterListParams, DeadLetterListResponse, DeadLetterStats } from '@/types/classifier'
import { collectPages } from './exportData'

export type RetryOutcome =
  | { state: 'waiting' }
  | { state: 'succeeded' }
  | { state: 'failed'; code: string; retries: string; exhausted: boolean; permanentReason: string | null }

/**
 * The outcome of a retry of `before` (the entry as it was when re-queued):
 * the entry gone from the queue means the document was classified; another
 * attempt than the last one before means it failed again; otherwise the
 * retry has not run yet. (The queue's own times are compared, not this
 * browser's clock.)
 */
export function retryOutcome(before: DeadLetterEntry, after: DeadLetterEntry | undefined): RetryOutcome {
  if (!after) return { state: 'succeeded' }
  if (after.last_attempt_at === before.last_attempt_at) return { state: 'waiting' }
  return {
    state: 'failed', code: after.error_code, retries: `${after.retry_count} / ${after.max_retries}`,
    exhausted: after.exhausted, permanentReason: after.permanent_reason ?? null,
  }
}

/** The outcome in words, for a toast and the row. */
export function outcomeText(o: RetryOutcome): string {
  switch (o.state) {
    case 'waiting': return 'retrying…'
    case 'succeeded': return 'retry succeeded: classified, gone from the queue'
    case 'failed': return `retry failed again with ${o.code} (${o.retries})${o.permanentReason ? `, permanent: ${o.permanentReason}` : o.exhausted ? ', exhausted' : ''}`
  }
}

/**
 * The value of the Source filter (and of ?source= in the URL) that selects
 * the entries recorded without a source name: the classifier takes an
 * empty source as "any", so they have their own flag (no_source). No
 * source is named so (names are lowercase letters, digits, _ and -).
 */
export const NO_SOURCE = '(none)'

/**
 * The filter of the view's Source, Error code, Retries and Raw index
 * controls. The raw index is how a source's dead letters are counted
 * (Sources): those recorded without a source name have its index too.
 */
export function deadLetterFilter(source: string, errorCode: string, exhausted: '' | 'true' | 'false', index = ''): DeadLetterFilter {
  const f: DeadLetterFilter = {
    source: source && source !== NO_SOURCE ? source : undefined,
    no_source: source === NO_SOURCE ? true : undefined,
    error_code: errorCode || undefined,
    exhausted: exhausted === '' ? undefined : exhausted === 'true',
  }
  if (index.trim()) f.index = index.trim()
  return f
}

/**
 * How many entries the filter matches from the queue's figures, when they
 * can say (one filter or none); null otherwise (count page by page).
 */
export function countFromStats(s: DeadLetterStats | undefined, f: DeadLetterFilter): number | null {
  if (!s) return null
  // The figures are not by index: an index filter is counted page by page.
  if (f.index !== undefined) return null
  const set = [f.source, f.no_source, f.error_code, f.exhausted].filter((v) => v !== undefined).length
  if (set === 0) return s.pending + s.exhausted
  if (set > 1) return null
  if (f.source) return s.by_source[f.source] ?? 0
  if (f.no_source) return s.by_source[''] ?? 0
  if (f.error_code) return s.by_error_code[f.error_code] ?? 0
  return f.exhausted ? s.exhausted : s.pending
}

/**
 * How many entries match the filter: by page of 500, up to EXPORT_LIMIT
 * (`more` when there are more).
 */
export async function countMatching(
  filter: DeadLetterFilter,
  list: (p: DeadLetterListParams) => Promise<DeadLetterListResponse>,
): Promise<{ count: number; more: boolean }> {
  const { entries, more } = await collectPages((cursor) => list({ ...filter, limit: 500, cursor }))
  return { count: entries.length, more }
}

/**
 * Why an entry is not retried (its error code is permanent: a retry
 * classifies the same document), or null when it may be. The classifier
 * says so on the entry; an entry without the field is retryable.
 */
export function retryRefusal(e: Pick<DeadLetterEntry, 'error_code' | 'retryable' | 'retry_refusal'>): string | null {
  if (e.retryable !== false) return null
  return e.retry_refusal || `${e.error_code} is permanent: a retry cannot succeed`
}

/** What "Retry all matching" did, in a line: re-queued, and skipped as permanent by code. */
export function bulkRequeueText(r: { requeued: number; skipped?: number; skipped_by_code?: Record<string, number> }): string {
  const entries = (n: number) => `${n} entr${n === 1 ? 'y' : 'ies'}`
  const done = `Re-queued ${entries(r.requeued)} matching the filter`
  if (!r.skipped) return done
  const codes = Object.entries(r.skipped_by_code ?? {}).sort(([a], [b]) => a.localeCompare(b)).map(([c, n]) => `${c} ${n}`).join(', ')
  return `${done}; skipped ${entries(r.skipped)} whose error is permanent (${codes}): a retry cannot succeed`
}
