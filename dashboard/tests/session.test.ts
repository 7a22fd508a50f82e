import { afterEach, describe, expect, it, vi } from 'vitest'
import { canRefresh, isLive, needsRefresh, REFRESH_AHEAD_MS, session, type Session } from '@/auth/session'
import { ApiError, createHttpClient } from '@/api/http'

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString()

function live(over: Partial<Session> = {}): Session {
  return { token: 'access-1', expiresAt: inMs(10 * 60_000), user: 'ann', refreshToken: 'refresh-1', sessionExpiresAt: inMs(12 * 3600_000), ...over }
}

/** A fake index-manager refresh endpoint: answers each call with the next pair, or with status. */
function refresher(status = 200) {
  let n = 1
  return vi.fn(async (url: RequestInfo | URL, init?: RequestInit) => {
    expect(String(url)).toBe('/api/index-manager/api/v1/auth/refresh')
    const body = JSON.parse(String(init?.body)) as { refresh_token: string }
    expect(body.refresh_token).toBe(`refresh-${n}`)
    if (status !== 200) return new Response(JSON.stringify({ error: { code: 'session_ended', message: 'ended' } }), { status })
    n++
    return new Response(JSON.stringify({ token: `access-${n}`, expires_at: inMs(15 * 60_000), refresh_token: `refresh-${n}`, session_expires_at: inMs(11 * 3600_000) }), { status: 200 })
  })
}

afterEach(() => {
  session.end('logout')
  localStorage.clear()
})

describe('session state', () => {
  it('tells a live session from one to refresh and one that ended', () => {
    const now = Date.parse('2026-11-29T10:00:00Z')
    const at = (ms: number) => new Date(now + ms).toISOString()
    const s = (access: number, session: number): Session => ({ token: 't', user: 'u', expiresAt: at(access), refreshToken: 'r', sessionExpiresAt: at(session) })
    expect(isLive(s(600_000, 3600_000), now)).toBe(true)
    expect(needsRefresh(s(600_000, 3600_000), now)).toBe(false)
    expect(needsRefresh(s(REFRESH_AHEAD_MS / 2, 3600_000), now)).toBe(true)
    expect(isLive(s(-1000, 3600_000), now)).toBe(true) // expired access, live session
    expect(isLive(s(-1000, -1), now)).toBe(false)
    expect(needsRefresh(s(-1000, -1), now)).toBe(false)
    expect(canRefresh({ token: 't', expiresAt: at(1000), user: 'u' }, now)).toBe(false) // a session from before refresh tokens
  })
})

describe('session refresh', () => {
  it('keeps a token far from expiry, and refreshes one about to expire once for concurrent callers', async () => {
    session.start(live())
    const f = refresher()
    await expect(session.freshToken(f as unknown as typeof fetch)).resolves.toBe('access-1')
    expect(f).not.toHaveBeenCalled()

    session.start(live({ expiresAt: inMs(REFRESH_AHEAD_MS / 2) }))
    const [a, b] = await Promise.all([session.freshToken(f as unknown as typeof fetch), session.freshToken(f as unknown as typeof fetch)])
    expect([a, b]).toEqual(['access-2', 'access-2'])
    expect(f).toHaveBeenCalledTimes(1)
    expect(session.current.value?.refreshToken).toBe('refresh-2')
    expect(JSON.parse(localStorage.getItem('nc-session') ?? '{}').refreshToken).toBe('refresh-2')
  })

  it('ends the session when the refresh is refused, and keeps a valid token through a network error', async () => {
    session.start(live({ expiresAt: inMs(REFRESH_AHEAD_MS / 2) }))
    const down = vi.fn(async () => { throw new TypeError('failed to fetch') })
    await expect(session.freshToken(down as unknown as typeof fetch)).resolves.toBe('access-1')
    expect(session.isAuthenticated.value).toBe(true)

    await expect(session.freshToken(refresher(401) as unknown as typeof fetch)).resolves.toBeNull()
    expect(session.current.value).toBeNull()
  })

  it('takes the session another tab refreshed instead of spending the refresh token again', async () => {
    session.start(live({ expiresAt: inMs(REFRESH_AHEAD_MS / 2) }))
    const other = live({ token: 'access-9', refreshToken: 'refresh-9' })
    localStorage.setItem('nc-session', JSON.stringify(other))
    const f = refresher()
    await expect(session.freshToken(f as unknown as typeof fetch)).resolves.toBe('access-9')
    expect(f).not.toHaveBeenCalled()
  })

  it('does not refresh again a token another request already replaced', async () => {
    session.start(live())
    const f = refresher()
    await expect(session.refresh('an-older-token', f as unknown as typeof fetch)).resolves.toBe('access-1')
    expect(f).not.toHaveBeenCalled()
    await expect(session.refresh('access-1', f as unknown as typeof fetch)).resolves.toBe('access-2')
    expect(f).toHaveBeenCalledTimes(1)
  })

  it('signs out at the index-manager too', async () => {
    session.start(live())
    const f = vi.fn(async () => new Response(null, { status: 204 }))
    session.logout(f as unknown as typeof fetch)
    expect(session.current.value).toBeNull()
    expect(f).toHaveBeenCalledWith('/api/index-manager/api/v1/auth/logout', expect.objectContaining({ body: JSON.stringify({ refresh_token: 'refresh-1' }) }))
  })
})

describe('http client and refresh', () => {
  it('sends a request refused with 401 once more with a refreshed token, and gives up on a second 401', async () => {
    const seen: string[] = []
    const service = vi.fn(async (_url: RequestInfo | URL, init?: RequestInit) => {
      const auth = (init?.headers as Record<string, string>).Authorization ?? ''
      seen.push(auth)
      return auth === 'Bearer new' ? new Response('{"ok":true}', { status: 200 }) : new Response('{"error":{"code":"unauthorized","message":"expired"}}', { status: 401 })
    })
    const onUnauthorized = vi.fn()
    const http = createHttpClient({ baseUrl: '/b', getToken: () => 'old', refresh: async (refused: string) => (refused === 'old' ? 'new' : null), onUnauthorized, fetch: service as unknown as typeof fetch })
    await expect(http.get('/x')).resolves.toEqual({ ok: true })
    expect(seen).toEqual(['Bearer old', 'Bearer new'])
    expect(onUnauthorized).not.toHaveBeenCalled()

    const stale = createHttpClient({ baseUrl: '/b', getToken: () => 'old', refresh: async () => null, onUnauthorized, fetch: service as unknown as typeof fetch })
    await expect(stale.get('/x')).rejects.toBeInstanceOf(ApiError)
    expect(onUnauthorized).toHaveBeenCalledTimes(1)
  })
})
