import { computed, ref } from 'vue'

// The operator's session, from index-manager login: a short access token
// (the bearer token the three services check, 15 minutes by default) and
// the session's refresh token, which buys the next access token until the
// session ends (12 hours from the login by default; docs/roles.md). It
// lives in localStorage so a reload and other tabs keep it; it is dropped
// on logout, when the session ends, and on a 401 that a refresh cannot cure.

export interface Session {
  token: string
  expiresAt: string
  user: string
  /** Buys the next access token (POST /auth/refresh); spent by its use. */
  refreshToken?: string
  /** When the session ends, whatever the refreshes. */
  sessionExpiresAt?: string
}

const STORAGE_KEY = 'nc-session'
const REFRESH_URL = '/api/index-manager/api/v1/auth/refresh'
const LOGOUT_URL = '/api/index-manager/api/v1/auth/logout'
/** The access token is refreshed this long before it expires. */
export const REFRESH_AHEAD_MS = 60_000

function load(): Session | null {
  try {
    const raw = localStorage.getItem(STORAGE_KEY)
    if (!raw) return null
    const s = JSON.parse(raw) as Partial<Session>
    if (typeof s.token !== 'string' || typeof s.expiresAt !== 'string') return null
    const out: Session = { token: s.token, expiresAt: s.expiresAt, user: s.user ?? '' }
    if (typeof s.refreshToken === 'string' && typeof s.sessionExpiresAt === 'string') {
      out.refreshToken = s.refreshToken
      out.sessionExpiresAt = s.sessionExpiresAt
    }
    return out
  } catch {
    return null
  }
}

function save(s: Session | null): void {
  try {
    if (s) localStorage.setItem(STORAGE_KEY, JSON.stringify(s))
    else localStorage.removeItem(STORAGE_KEY)
  } catch {
    // Private mode: the session lasts as long as the tab.
  }
}

const current = ref<Session | null>(load())

/** Reason the last session ended, shown on the login page. */
export const sessionEndReason = ref<'expired' | 'logout' | null>(null)

/** Whether the access token has expired (or there is none). */
export function isExpired(s: Session | null, now: number = Date.now()): boolean {
  if (!s) return true
  const t = Date.parse(s.expiresAt)
  return Number.isNaN(t) || t <= now
}

/** Whether the session can still buy an access token. */
export function canRefresh(s: Session | null, now: number = Date.now()): boolean {
  if (!s?.refreshToken || !s.sessionExpiresAt) return false
  const t = Date.parse(s.sessionExpiresAt)
  return !Number.isNaN(t) && t > now
}

/** Whether the session goes on: a valid access token, or one to be bought. */
export function isLive(s: Session | null, now: number = Date.now()): boolean {
  return !isExpired(s, now) || canRefresh(s, now)
}

/** Whether the access token should be refreshed now. */
export function needsRefresh(s: Session | null, now: number = Date.now()): boolean {
  return canRefresh(s, now) && isExpired(s, now + REFRESH_AHEAD_MS)
}

interface RefreshAnswer {
  token: string
  expires_at: string
  refresh_token: string
  session_expires_at: string
}

let inflight: Promise<string | null> | null = null

/**
 * Buys a new access token with the refresh token, once at a time in this
 * tab and, through a Web Lock, across the tabs that share the session: a
 * refresh token is spent by its use, and one presented twice ends the
 * session. Inside the lock the stored session is read again, and one that
 * another tab refreshed meanwhile is taken as it is. A 401 or 400 ends the
 * session; a network error or 5xx keeps the current token while it lasts.
 */
function refreshNow(fetchImpl: typeof fetch = (i, init) => globalThis.fetch(i, init)): Promise<string | null> {
  if (inflight) return inflight
  const run = async (): Promise<string | null> => {
    const stored = load()
    if (stored && stored.refreshToken !== current.value?.refreshToken && stored.user === current.value?.user) current.value = stored
    const s = current.value
    if (!s) return null
    if (!needsRefresh(s)) return isExpired(s) ? null : s.token
    try {
      const res = await fetchImpl(REFRESH_URL, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ refresh_token: s.refreshToken }),
      })
      if (res.status === 401 || res.status === 400) {
        end('expired')
        return null
      }
      if (!res.ok) return isExpired(s) ? null : s.token
      const body = (await res.json()) as RefreshAnswer
      if (current.value?.refreshToken !== s.refreshToken) return session.token() // signed out meanwhile
      start({ token: body.token, expiresAt: body.expires_at, user: s.user, refreshToken: body.refresh_token, sessionExpiresAt: body.session_expires_at })
      return body.token
    } catch {
      return isExpired(s) ? null : s.token
    }
  }
  const locks = typeof navigator !== 'undefined' ? navigator.locks : undefined
  inflight = (locks ? locks.request('nc-session-refresh', run) : run()).finally(() => {
    inflight = null
  })
  return inflight
}

function start(s: Session): void {
  current.value = s
  sessionEndReason.value = null
  save(s)
}

function end(reason: 'expired' | 'logout'): void {
  // A 401 without a session (a failed login) ends nothing.
  if (current.value === null) return
  current.value = null
  sessionEndReason.value = reason
  save(null)
}

export const session = {
  current: computed(() => current.value),
  isAuthenticated: computed(() => isLive(current.value)),
  /** The access token while it is valid, else null (no refresh). */
  token(): string | null {
    if (isExpired(current.value)) return null
    return current.value?.token ?? null
  },
  /** The access token, refreshed first when it expires within a minute. */
  async freshToken(fetchImpl?: typeof fetch): Promise<string | null> {
    if (needsRefresh(current.value)) return refreshNow(fetchImpl)
    return session.token()
  },
  /**
   * Buys a new access token after a service refused refused (a 401); null
   * when the session ended. A token another request already replaced is
   * not refreshed again: the current one is answered.
   */
  async refresh(refused: string, fetchImpl?: typeof fetch): Promise<string | null> {
    if (inflight) await inflight
    const s = current.value
    if (s && s.token !== refused && !isExpired(s)) return s.token
    if (s && canRefresh(s)) s.expiresAt = new Date(0).toISOString() // the service refused it: spent
    return refreshNow(fetchImpl)
  },
  start,
  end,
  /** Signs out: ends the session at the index-manager too (fire and forget). */
  logout(fetchImpl: typeof fetch = (i, init) => globalThis.fetch(i, init)): void {
    const token = current.value?.refreshToken
    end('logout')
    if (token) {
      void fetchImpl(LOGOUT_URL, {
        method: 'POST',
        keepalive: true,
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ refresh_token: token }),
      }).catch(() => undefined)
    }
  },
}

// Another tab signed in, refreshed or signed out.
if (typeof window !== 'undefined') {
  window.addEventListener('storage', (e) => {
    if (e.key === STORAGE_KEY) current.value = load()
  })
}
