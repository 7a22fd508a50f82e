// The index-manager's allowlist for the settings of a new index, checked
// before sending so the create dialog can say what is wrong. The service
// checks again (index-manager/internal/api/settings.go); the bounds here are
// the same: shards 1-8, replicas 0-3, refresh interval 1s-5m written with
// ms, s or m. Blank fields take the service's defaults.

export const SHARDS = { min: 1, max: 8 } as const
export const REPLICAS = { min: 0, max: 3 } as const
export const REFRESH_MS = { min: 1_000, max: 300_000 } as const

/** The dialog's fields, as typed. */
export interface SettingsForm {
  shards: string
  replicas: string
  refreshInterval: string
}

export type SettingsErrors = Partial<Record<keyof SettingsForm, string>>

/** The settings to send (only the fields given) and what is wrong with the rest. */
export interface CheckedSettings {
  settings: Record<string, number | string>
  errors: SettingsErrors
}

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000 } as const

function boundedInt(raw: string, lo: number, hi: number, what: string): number | string {
  if (!/^[0-9]{1,7}$/.test(raw)) return `${what} must be a whole number from ${lo} to ${hi}`
  const n = Number(raw)
  return n < lo || n > hi ? `${what} must be from ${lo} to ${hi}` : n
}

/** Checks a refresh interval such as "1s", "500ms" or "2m"; returns an error or null. */
export function refreshIntervalError(raw: string): string | null {
  const m = /^([0-9]{1,7})(ms|s|m)$/.exec(raw)
  if (!m) return 'Refresh interval must be a time such as 1s, 1500ms or 2m'
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]
  return ms < REFRESH_MS.min || ms > REFRESH_MS.max ? 'Refresh interval must be from 1s to 5m' : null
}

export function checkSettings(form: SettingsForm): CheckedSettings {
  const settings: Record<string, number | string> = {}
  const errors: SettingsErrors = {}
  const shards = form.shards.trim()
  if (shards) {
    const v = boundedInt(shards, SHARDS.min, SHARDS.max, 'Shards')
    if (typeof v === 'number') settings.number_of_shards = v
    else errors.shards = v
  }
  const replicas = form.replicas.trim()
  if (replicas) {
    const v = boundedInt(replicas, REPLICAS.min, REPLICAS.max, 'Replicas')
    if (typeof v === 'number') settings.number_of_replicas = v
    else errors.replicas = v
  }
  const refresh = form.refreshInterval.trim()
  if (refresh) {
    const e = refreshIntervalError(refresh)
    if (e) errors.refreshInterval = e
    else settings.refresh_interval = refresh
  }
  return { settings, errors }
}
