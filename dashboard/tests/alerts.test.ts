import { describe, expect, it } from 'vitest'
import { alertScope, sortAlerts } from '@/lib/alerts'
import type { PromAlert } from '@/api/prometheus'

const alert = (name: string, state: PromAlert['state'], severity: string, extra: Record<string, string> = {}): PromAlert =>
  ({ labels: { alertname: name, severity, ...extra }, annotations: {}, state })

describe('alerts', () => {
  it('lists firing before pending, critical before warning, then by name', () => {
    const sorted = sortAlerts([
      alert('B', 'pending', 'critical'), alert('Z', 'firing', 'warning'), alert('A', 'firing', 'warning'), alert('Y', 'firing', 'critical'),
    ])
    expect(sorted.map((a) => a.labels.alertname)).toEqual(['Y', 'A', 'Z', 'B'])
  })

  it('names where an alert comes from by its other labels', () => {
    expect(alertScope(alert('ServiceDown', 'firing', 'critical', { job: 'publisher', instance: '127.0.0.1:1' }))).toBe('job=publisher, instance=127.0.0.1:1')
  })
})

describe('throughput by source', () => {
  it('joins classified and to-publish rates per source, busiest first, idle sources left out', async () => {
    const { throughputRows } = await import('@/lib/throughput')
    const v = (pairs: [string, string][]) => pairs.map(([source, n]) => ({ metric: { source }, value: [0, n] as [number, string] }))
    expect(throughputRows(v([['a', '2'], ['b', '30'], ['idle', '0']]), v([['a', '1.5'], ['c', '4'], ['idle', '0']]))).toEqual([
      { source: 'b', classified: 30, published: 0 },
      { source: 'a', classified: 2, published: 1.5 },
      { source: 'c', classified: 0, published: 4 },
    ])
  })
})
