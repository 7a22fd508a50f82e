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
