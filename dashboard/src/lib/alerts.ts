// The alerts Prometheus holds, in the order an operator reads them: firing
// before pending, critical before warning, then by name.
import type { PromAlert } from '@/api/prometheus'

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
