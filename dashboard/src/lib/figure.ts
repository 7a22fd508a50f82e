// What a figure on screen may be besides a number: still loading, or
// failed because the service behind it did not answer, with or without a
// last good value. Built from a TanStack Query's own state, so every card,
// chart and table says it the same way.
import type { Ref } from 'vue'
import { ApiError } from '@/api/http'
import { formatDuration } from './format'

/** The state of the query a figure comes from. */
export interface FigureSource {
  /** The service the figure comes from, as the operator knows it ("publisher"). */
  service: string
  /** No data yet (TanStack Query's isPending). */
  pending: boolean
  /** The last fetch failed (TanStack Query's error). */
  error: Error | null
  /** When the last good data arrived, in ms since the epoch; 0 when never (dataUpdatedAt). */
  updatedAt: number
}

/** The parts of a useQuery result a figure reads. */
export interface QueryLike {
  isPending: Ref<boolean>
  error: Ref<Error | null>
  dataUpdatedAt: Ref<number>
}

/** The figure source of a query, read now (call it in a template or computed). */
export function fromQuery(q: QueryLike, service: string): FigureSource {
  return { service, pending: q.isPending.value, error: q.error.value, updatedAt: q.dataUpdatedAt.value }
}

export type FigureState = 'loading' | 'error' | 'stale' | 'value'

/** Which of the four a figure shows: an error wins, then a missing first answer. */
export function figureState(s: Pick<FigureSource, 'pending' | 'error' | 'updatedAt'>): FigureState {
  if (s.error) return s.updatedAt > 0 ? 'stale' : 'error'
  if (s.pending) return 'loading'
  return 'value'
}

/** "publisher unavailable (502)", "classifier unreachable", "index-manager error (500)". */
export function failureText(service: string, error: Error): string {
  if (error instanceof ApiError) {
    if (error.status === 0) return `${service} unreachable`
    if (error.status === 502 || error.status === 503 || error.status === 504) return `${service} unavailable (${error.status})`
    return `${service} error (${error.status})`
  }
  return `${service} failed`
}

/** "last good 2 min ago": the age of the last good value. */
export function lastGoodText(updatedAt: number, now: number): string {
  const s = Math.max(0, Math.round((now - updatedAt) / 1000))
  if (s < 60) return `last good ${s} s ago`
  if (s < 3600) return `last good ${Math.floor(s / 60)} min ago`
  return `last good ${formatDuration(s)} ago`
}
