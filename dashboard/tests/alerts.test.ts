import { describe, expect, it } from 'vitest'
import { alertScope, firingUnsilenced, groupAlerts, runbookUrl, sortAlerts } from '@/lib/alerts'
import type { PromAlert } from '@/api/prometheus'
import type { Silence } from '@/api/dashboard'

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

describe('grouped alerts', () => {
  const silence = (alertname: string, matchers: Silence['matchers'] = [], state: Silence['state'] = 'active'): Silence =>
    ({ id: 's-' + alertname, alertname, matchers, starts_at: '', ends_at: '2030-01-01T00:00:00Z', created_by: 'carol', comment: 'fixing', state })

  it('shows a warning and critical pair of one name as one row, at critical, with its runbook link', () => {
    const warn = { ...alert('QueueHigh', 'firing', 'warning'), annotations: { runbook_url: 'https://runbook.example/queue', summary: 'queue high' } }
    const crit = { ...alert('QueueHigh', 'firing', 'critical'), annotations: { runbook_url: 'https://runbook.example/queue', summary: 'queue very high' } }
    const groups = groupAlerts([warn, alert('Other', 'pending', 'warning'), crit])
    expect(groups.map((g) => [g.alertname, g.severity, g.state, g.alerts.length])).toEqual([['QueueHigh', 'critical', 'firing', 2], ['Other', 'warning', 'pending', 1]])
    expect(groups[0]!.runbookUrl).toBe('https://runbook.example/queue')
    expect(groups[0]!.summary).toBe('queue very high')
  })

  it('links only http(s) runbooks', () => {
    expect(runbookUrl({ ...alert('A', 'firing', 'warning'), annotations: { runbook_url: 'javascript:alert(1)' } })).toBeUndefined()
  })

  it('marks a group silenced when an active silence covers every firing instance, and leaves it out of the count', () => {
    const alerts = [alert('Down', 'firing', 'critical', { job: 'a' }), alert('Down', 'firing', 'critical', { job: 'b' }), alert('Lag', 'firing', 'warning')]
    expect(firingUnsilenced(alerts)).toBe(3)
    const all = groupAlerts(alerts, [silence('Down')])
    expect(all.map((g) => [g.alertname, g.silenced])).toEqual([['Lag', false], ['Down', true]])
    expect(firingUnsilenced(alerts, [silence('Down')])).toBe(1)
    // A silence of one job covers one instance: the group still fires.
    expect(groupAlerts(alerts, [silence('Down', [{ name: 'job', value: 'a' }])]).find((g) => g.alertname === 'Down')!.silenced).toBe(false)
    expect(firingUnsilenced(alerts, [silence('Down', [{ name: 'job', value: 'a' }])])).toBe(2)
    // An expired silence covers nothing.
    expect(firingUnsilenced(alerts, [silence('Down', [], 'expired')])).toBe(3)
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
