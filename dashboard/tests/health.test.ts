import { describe, expect, it } from 'vitest'
import { alertsBadge, healthItems } from '@/lib/health'
import type { HealthSummary } from '@/api/dashboard'

const summary = (alerts: Partial<HealthSummary['alerts']> = {}): HealthSummary => ({
  generated_at: '2026-11-29T08:00:00Z',
  services: [
    { name: 'classifier', state: 'up', status: 200 },
    { name: 'publisher', state: 'down', status: 0, detail: 'the publisher did not answer' },
    { name: 'index-manager', state: 'not_ready', status: 503, detail: 'the index-manager answered 503 to /ready' },
    { name: 'prometheus', state: 'not_configured', status: 0, detail: 'PROMETHEUS_URL is not set' },
    { name: 'alertmanager', state: 'up', status: 200 },
  ],
  alerts: { state: 'ok', firing: 2, silenced: 1, inhibited: 0, alertnames: ['A', 'B'], ...alerts },
})

describe('health strip', () => {
  it('names each service up, down, not ready or not configured, with why in its title', () => {
    const items = healthItems(summary())
    expect(items.map((i) => [i.label, i.text, i.tone])).toEqual([
      ['Classifier', 'up', 'ok'],
      ['Publisher', 'down', 'bad'],
      ['Index manager', 'not ready', 'warn'],
      ['Prometheus', 'not configured', 'muted'],
      ['Alertmanager', 'up', 'ok'],
    ])
    expect(items[1]!.title).toBe('Publisher down: the publisher did not answer')
    expect(items[0]!.title).toBe('Classifier up')
  })

  it('counts the unsilenced firing alerts, and the silenced ones beside them', () => {
    const b = alertsBadge(summary().alerts)
    expect(b).toMatchObject({ firing: 2, text: '2 firing · 1 silenced', tone: 'bad' })
    expect(b.title).toBe('2 firing alerts not silenced: A, B')
    expect(alertsBadge(summary({ firing: 0, silenced: 0, alertnames: [] }).alerts)).toMatchObject({ firing: 0, text: '0 firing', tone: 'ok' })
    expect(alertsBadge(summary({ firing: 1, silenced: 0, alertnames: ['A'] }).alerts).title).toBe('1 firing alert not silenced: A')
  })

  it('never shows 0 when Alertmanager did not count: not configured, or not answering', () => {
    const none = alertsBadge(summary({ state: 'not_configured', firing: null, silenced: null, inhibited: null, alertnames: [], detail: 'ALERTMANAGER_URL is not set' }).alerts)
    expect(none.firing).toBeNull()
    expect(none.text).toBe('Alerts not counted: no Alertmanager')
    expect(none.text).not.toMatch(/\d/)
    const down = alertsBadge(summary({ state: 'unavailable', firing: null, silenced: null, inhibited: null, alertnames: [], detail: 'Alertmanager did not answer' }).alerts)
    expect(down).toMatchObject({ firing: null, text: 'Alerts unavailable', tone: 'warn', title: 'Alertmanager did not answer' })
  })
})
