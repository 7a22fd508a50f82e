import { describe, expect, it } from 'vitest'
import { roundTicks, stepLabel, TICK_STEPS } from '@/lib/chartAxis'

// Local time of t as minutes since midnight, and the offset Date uses.
const localMinutes = (t: number) => { const d = new Date(t); return d.getHours() * 60 + d.getMinutes() + d.getSeconds() / 60 }

describe('roundTicks', () => {
  const now = Date.UTC(2026, 10, 29, 2, 13, 27, 456) // "Sun 02:13:27"
  const ranges = { '15m': 15 * 60_000, '1h': 3600_000, '6h': 6 * 3600_000, '24h': 24 * 3600_000, '7d': 7 * 24 * 3600_000 }

  for (const [name, span] of Object.entries(ranges)) {
    it(`falls on round times over ${name}, at most 8, inside the axis`, () => {
      const ticks = roundTicks(now - span, now)
      expect(ticks.length).toBeGreaterThanOrEqual(3)
      expect(ticks.length).toBeLessThanOrEqual(8)
      const step = ticks[1]! - ticks[0]!
      expect(TICK_STEPS as readonly number[]).toContain(step)
      for (const t of ticks) {
        expect(t).toBeGreaterThanOrEqual(now - span)
        expect(t).toBeLessThanOrEqual(now)
        // A multiple of the step in local time: 06:00, not 02:13.
        expect((localMinutes(t) * 60_000) % Math.min(step, 24 * 3600_000)).toBe(0)
      }
    })
  }

  it('gives nothing for an empty axis', () => {
    expect(roundTicks(5, 5)).toEqual([])
  })

  it('names its steps', () => {
    expect([15_000, 300_000, 7_200_000, 86_400_000].map(stepLabel)).toEqual(['15 s', '5 min', '2 h', '1 day'])
  })
})
