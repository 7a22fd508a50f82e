// The alerts Prometheus holds, in the order an operator reads them: firing
// before pending, critical before warning, then by name.
import type { PromAlert } from '@/api/prometheus'
import type { Silence } from '@/api/dashboard'

const SEVERITY: Record<string, number> = { critical: 0, warning: 1, info: 2 }

export function sortAlerts(alerts: PromAlert[]): PromAlert[] {
  const rank = (a: PromAlert) => [a.state === 'firing' ? 0 : 1, SEVERITY[a.labels.severity ?? ''] ?? 3] as const
  return [...alerts].sort((a, b) => {
    const [ra, rb] = [rank(a), rank(b)]
    return ra[0] - rb[0] || ra[1] - rb[1] || (a.labels.alertname ?? '').localeCompare(b.labels.alertname ?? '')
  })
}

/** The labels that tell where an alert comes from (not its name or severity). */
export function alertScope(a: PromAlert): string {
  return Object.entries(a.labels)
    .filter(([k]) => k !== 'alertname' && k !== 'severity')
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')
}

/**
 * One alert name as the Alerts page shows it: its instances (a warning and
 * a critical of one figure are two rules of one name), the highest severity
 * and state among them, the runbook link any of them carries, and the
 * active silences that cover it (all of its firing instances silenced:
 * silenced).
 */
export interface AlertGroup {
  alertname: string
  severity: string
  state: 'firing' | 'pending'
  alerts: PromAlert[]
  runbookUrl?: string
  summary?: string
  silences: Silence[]
  silenced: boolean
}

/** Whether silence s covers alert a: every matcher equal to a's label. */
export function silences(s: Silence, a: PromAlert): boolean {
  return s.state === 'active' && a.labels.alertname === s.alertname && s.matchers.every((m) => a.labels[m.name] === m.value)
}

/** Only http(s) runbook links are links (an annotation is text anyone with the rules can write). */
export function runbookUrl(a: PromAlert): string | undefined {
  const u = a.annotations.runbook_url
  return u && /^https?:\/\//i.test(u) ? u : undefined
}

export function groupAlerts(alerts: PromAlert[], active: Silence[] = []): AlertGroup[] {
  const byName = new Map<string, PromAlert[]>()
  for (const a of sortAlerts(alerts)) {
    const name = a.labels.alertname ?? ''
    byName.set(name, [...(byName.get(name) ?? []), a])
  }
  const groups: AlertGroup[] = []
  for (const [alertname, list] of byName) {
    // sortAlerts put the firing, most severe instance first.
    const top = list[0]!
    const severity = [...list].sort((a, b) => (SEVERITY[a.labels.severity ?? ''] ?? 3) - (SEVERITY[b.labels.severity ?? ''] ?? 3))[0]!.labels.severity ?? ''
    const covering = active.filter((s) => list.some((a) => silences(s, a)))
    const firing = list.filter((a) => a.state === 'firing')
    groups.push({
      alertname, severity, state: top.state, alerts: list,
      runbookUrl: list.map(runbookUrl).find((u) => u !== undefined),
      summary: list.find((a) => a.labels.severity === severity)?.annotations.summary ?? top.annotations.summary,
      silences: covering,
      silenced: firing.length > 0 && firing.every((a) => active.some((s) => silences(s, a))),
    })
  }
  const rank = (g: AlertGroup) => [g.silenced ? 1 : 0, g.state === 'firing' ? 0 : 1, SEVERITY[g.severity] ?? 3] as const
  return groups.sort((a, b) => {
    const [ra, rb] = [rank(a), rank(b)]
    return ra[0] - rb[0] || ra[1] - rb[1] || ra[2] - rb[2] || a.alertname.localeCompare(b.alertname)
  })
}

/** Firing alert instances no active silence covers: what the health strip counts. */
export function firingUnsilenced(alerts: PromAlert[], active: Silence[] = []): number {
  return alerts.filter((a) => a.state === 'firing' && !active.some((s) => silences(s, a))).length
}

/** The durations the Silence dialog offers (Go syntax, as the server takes them). */
export const SILENCE_PRESETS = [
  { label: '1 hour', duration: '1h' },
  { label: '4 hours', duration: '4h' },
  { label: '1 day', duration: '24h' },
  { label: '7 days', duration: '168h' },
] as const
