// One action applied to many items (indices) from the browser, a few at a
// time, each item's outcome kept: done, refused by the service (a 4xx with
// its reason, such as the index-manager's safety checks), failed (the
// service or the network broke), or skipped when the operator stopped the
// run before the item was started.
import { ApiError } from '@/api/http'

export type BulkOutcome = 'done' | 'refused' | 'failed' | 'skipped'

export interface BulkResult {
  item: string
  outcome: BulkOutcome
  /** The service's reason for a refusal or failure; empty when done. */
  message: string
}

export interface BulkOptions {
  /** How many items run at once. Defaults to BULK_CONCURRENCY. */
  concurrency?: number
  /** Called as each item settles, with the results so far in settling order. */
  onResult?: (result: BulkResult, settled: number) => void
  /** Checked before each item starts; true leaves the rest skipped. */
  stopped?: () => boolean
}

/** Items acted on at once: enough to be quick, few enough to spare the cluster. */
export const BULK_CONCURRENCY = 4

/** What one failed call means for the operator. */
export function outcomeOf(e: unknown): Pick<BulkResult, 'outcome' | 'message'> {
  if (e instanceof ApiError && e.status >= 400 && e.status < 500) return { outcome: 'refused', message: e.message }
  return { outcome: 'failed', message: e instanceof Error ? e.message : String(e) }
}

/** Runs action on every item with bounded concurrency; results keep the items' order. */
export async function runBulk(items: string[], action: (item: string) => Promise<unknown>, opts: BulkOptions = {}): Promise<BulkResult[]> {
  const results: BulkResult[] = items.map((item) => ({ item, outcome: 'skipped', message: '' }))
  let next = 0
  let settled = 0
  const worker = async () => {
    while (next < items.length && !opts.stopped?.()) {
      const i = next++
      try {
        await action(items[i]!)
        results[i] = { item: items[i]!, outcome: 'done', message: '' }
      } catch (e) {
        results[i] = { item: items[i]!, ...outcomeOf(e) }
      }
      opts.onResult?.(results[i]!, ++settled)
    }
  }
  const n = Math.max(1, Math.min(opts.concurrency ?? BULK_CONCURRENCY, items.length))
  await Promise.all(Array.from({ length: n }, worker))
  return results
}

/** Counts of each outcome. */
export function tally(results: BulkResult[]): Record<BulkOutcome, number> {
  const t = { done: 0, refused: 0, failed: 0, skipped: 0 }
  for (const r of results) t[r.outcome]++
  return t
}
