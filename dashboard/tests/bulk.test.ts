import { describe, expect, it } from 'vitest'
import { ApiError } from '@/api/http'
import { outcomeOf, runBulk, tally } from '@/lib/bulk'

describe('bulk actions', () => {
  it('runs every item at most `concurrency` at a time and keeps the items order', async () => {
    let inFlight = 0
    let most = 0
    const seen: string[] = []
    const items = Array.from({ length: 10 }, (_, i) => `i${i}`)
    const results = await runBulk(items, async (item) => {
      inFlight++
      most = Math.max(most, inFlight)
      // Settle in reverse order of start, so the order of the results is ours, not theirs.
      for (let k = 0; k < 20 - Number(item.slice(1)); k++) await Promise.resolve()
      inFlight--
      seen.push(item)
    }, { concurrency: 3 })
    expect(most).toBe(3)
    expect(results.map((r) => r.item)).toEqual(items)
    expect(results.every((r) => r.outcome === 'done')).toBe(true)
    expect(seen).toHaveLength(10)
  })

  it('tells refusals (4xx, with the service reason) from failures', async () => {
    const results = await runBulk(['ok', 'protected', 'down', 'broken'], async (item) => {
      if (item === 'protected') throw new ApiError(403, 'protected', 'index protected is protected and cannot be changed through this API')
      if (item === 'down') throw new ApiError(503, 'unavailable', 'Elasticsearch did not answer')
      if (item === 'broken') throw new TypeError('Failed to fetch')
    })
    expect(results).toEqual([
      { item: 'ok', outcome: 'done', message: '' },
      { item: 'protected', outcome: 'refused', message: 'index protected is protected and cannot be changed through this API' },
      { item: 'down', outcome: 'failed', message: 'Elasticsearch did not answer' },
      { item: 'broken', outcome: 'failed', message: 'Failed to fetch' },
    ])
    expect(tally(results)).toEqual({ done: 1, refused: 1, failed: 2, skipped: 0 })
    expect(outcomeOf(new ApiError(409, 'conflict', 'x')).outcome).toBe('refused')
  })

  it('reports each item as it settles and skips the rest once stopped', async () => {
    let stop = false
    const settled: number[] = []
    const results = await runBulk(['a', 'b', 'c', 'd'], async (item) => {
      if (item === 'b') stop = true
    }, { concurrency: 1, stopped: () => stop, onResult: (_, n) => settled.push(n) })
    expect(results.map((r) => r.outcome)).toEqual(['done', 'done', 'skipped', 'skipped'])
    expect(settled).toEqual([1, 2])
  })

  it('does nothing for no items', async () => {
    expect(await runBulk([], async () => { throw new Error('not called') })).toEqual([])
  })
})
