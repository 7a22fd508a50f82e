// The health strip of every page (components/layout/HealthStrip.vue), from
// GET /api/health: each service up or down, and the firing alerts no
// silence holds. A count Alertmanager did not give (not configured, not
// answering) is said in words, never shown as 0.
import type { HealthSummary, ServiceHealth } from '@/api/dashboard'

export type HealthTone = 'ok' | 'bad' | 'warn' | 'muted'

export interface HealthItem {
  name: ServiceHealth['name']
  label: string
  /** up, down, not ready, not configured */
  text: string
  tone: HealthTone
  /** What a title or screen reader says: the state and why. */
  title: string
}

const LABELS: Record<ServiceHealth['name'], string> = {
  classifier: 'Classifier',
  publisher: 'Publisher',
  'index-manager': 'Index manager',
  prometheus: 'Prometheus',
  alertmanager: 'Alertmanager',
}

const STATE_TEXT: Record<ServiceHealth['state'], [string, HealthTone]> = {
  up: ['up', 'ok'],
  not_ready: ['not ready', 'warn'],
  down: ['down', 'bad'],
  not_configured: ['not configured', 'muted'],
}

/** Each service of the answer as the strip shows it, in the server's order. */
export function healthItems(h: HealthSummary): HealthItem[] {
  return h.services.map((s) => {
    const label = LABELS[s.name] ?? s.name
    const [text, tone] = STATE_TEXT[s.state] ?? [s.state, 'muted']
    return { name: s.name, label, text, tone, title: s.detail ? `${label} ${text}: ${s.detail}` : `${label} ${text}` }
  })
}

export interface AlertsBadge {
  /** The unsilenced firing alerts, null when Alertmanager did not count them. */
  firing: number | null
  text: string
  tone: HealthTone
  title: string
}

/** "2 firing · 1 silenced", or why there is no count. */
export function alertsBadge(a: HealthSummary['alerts']): AlertsBadge {
  if (a.state === 'not_configured') {
    return { firing: null, text: 'Alerts not counted: no Alertmanager', tone: 'muted', title: a.detail ?? 'ALERTMANAGER_URL is not set' }
  }
  if (a.state !== 'ok' || a.firing === null) {
    return { firing: null, text: 'Alerts unavailable', tone: 'warn', title: a.detail ?? 'Alertmanager did not answer' }
  }
  const silenced = a.silenced ? ` · ${a.silenced} silenced` : ''
  const names = a.alertnames.length ? `: ${a.alertnames.join(', ')}` : ''
  return {
    firing: a.firing,
    text: `${a.firing} firing${silenced}`,
    tone: a.firing > 0 ? 'bad' : 'ok',
    title: `${a.firing} firing alert${a.firing === 1 ? '' : 's'} not silenced${names}`,
  }
}
