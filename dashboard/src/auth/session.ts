import { computed, ref } from 'vue'

// The operator's session: the bearer token from index-manager login, shared
// by the three services (one JWT secret). It lives in localStorage so a
// reload keeps it; it is dropped on logout, on expiry and on any 401.

export interface Session {
  token: string
  expiresAt: string
  user: string
}

const STORAGE_KEY = 'nc-session'

function load(): Session | null {
  try {
    const raw = localStorage.getItem(STORAGE_KEY)
    if (!raw) return null
    const s = JSON.parse(raw) as Partial<Session>
    if (typeof s.token !== 'string' || typeof s.expiresAt !== 'string') return null
    return { token: s.token, expiresAt: s.expiresAt, user: s.user ?? '' }
  } catch {
    return null
  }
}

const current = ref<Session | null>(load())

/** Reason the last session ended, shown on the login page. */
export const sessionEndReason = ref<'expired' | 'logout' | null>(null)

export function isExpired(s: Session | null, now: number = Date.now()): boolean {
  if (!s) return true
  const t = Date.parse(s.expiresAt)
  return Number.isNaN(t) || t <= now
}

export const session = {
  current: computed(() => current.value),
  isAuthenticated: computed(() => !isExpired(current.value)),
  token(): string | null {
    if (isExpired(current.value)) return null
    return current.value?.token ?? null
  },
  start(s: Session): void {
    current.value = s
    sessionEndReason.value = null
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify(s))
    } catch {
      // Private mode: the session lasts as long as the tab.
    }
  },
  end(reason: 'expired' | 'logout'): void {
    // A 401 without a session (a failed login) ends nothing.
    if (current.value === null) return
    current.value = null
    sessionEndReason.value = reason
    try {
      localStorage.removeItem(STORAGE_KEY)
    } catch {
      // ignore
    }
  },
}
