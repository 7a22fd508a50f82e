// The fetch-based HTTP layer every service client is built on: JSON in and
// out, the bearer token on every call, the services' error shape
// {"error":{"code","message"}} turned into ApiError, and a hook for 401 so
// any view can send the operator back to the login page.

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  /** Seconds the server asked to wait before trying again (Retry-After), if it said. */
  readonly retryAfter?: number

  constructor(status: number, code: string, message: string, retryAfter?: number) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    if (retryAfter !== undefined) this.retryAfter = retryAfter
  }

  get isUnauthorized(): boolean {
    return this.status === 401
  }

  /** 429: the server is busy (a cap of queries in flight), not refusing the request itself; try again later. */
  get isBusy(): boolean {
    return this.status === 429
  }
}

/** Retry-After in seconds (delta-seconds or an HTTP date), or undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined
  const v = value.trim()
  if (/^\d+$/.test(v)) return Number(v)
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000))
}

export type QueryValue = string | number | boolean | null | undefined
export type QueryParams = Record<string, QueryValue | QueryValue[]>

/** Builds "?a=1&b=x" from params, leaving out undefined, null and "". */
export function buildQuery(params?: QueryParams): string {
  if (!params) return ''
  const sp = new URLSearchParams()
  for (const [key, raw] of Object.entries(params)) {
    const values = Array.isArray(raw) ? raw : [raw]
    for (const v of values) {
      if (v === undefined || v === null || v === '') continue
      sp.append(key, String(v))
    }
  }
  const s = sp.toString()
  return s ? `?${s}` : ''
}

export interface HttpClientOptions {
  /** Prefix of every path, e.g. /api/index-manager/api/v1. */
  baseUrl: string
  /** Returns the bearer token, or null when there is none. */
  getToken: () => string | null | Promise<string | null>
  /**
   * Buys a new bearer token after a 401 (a session refresh), or null when
   * there is none to buy; the request is sent once more with a new one.
   */
  refresh?: (refused: string) => Promise<string | null>
  /** Called on a 401 answer that a refresh did not cure. */
  onUnauthorized?: () => void
  fetch?: typeof fetch
}

export interface HttpClient {
  get<T>(path: string, params?: QueryParams): Promise<T>
  post<T>(path: string, body?: unknown, params?: QueryParams): Promise<T>
  put<T>(path: string, body?: unknown): Promise<T>
  delete<T>(path: string, params?: QueryParams): Promise<T>
  /** GET returning the body as text (Prometheus /metrics). */
  text(path: string): Promise<string>
}

/** Encodes one path segment (an index name, a document id). */
export const seg = (s: string | number): string => encodeURIComponent(String(s))

async function errorFrom(res: Response): Promise<ApiError> {
  let code = `http_${res.status}`
  let message = res.statusText || `HTTP ${res.status}`
  try {
    const text = await res.text()
    if (text) {
      try {
        const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }
        if (body.error && typeof body.error.message === 'string') {
          message = body.error.message
          if (typeof body.error.code === 'string') code = body.error.code
        } else {
          message = text.slice(0, 300)
        }
      } catch {
        message = text.slice(0, 300)
      }
    }
  } catch {
    // keep the status text
  }
  if (res.status === 502 || res.status === 503 || res.status === 504) {
    if (code.startsWith('http_')) message = `service unavailable (${res.status}): ${message}`
  }
  return new ApiError(res.status, code, message, parseRetryAfter(res.headers.get('Retry-After')))
}

export function createHttpClient(opts: HttpClientOptions): HttpClient {
  const doFetch = opts.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init))

  async function request(method: string, path: string, body?: unknown, params?: QueryParams, accept = 'application/json'): Promise<Response> {
    const headers: Record<string, string> = { Accept: accept }
    let token = await opts.getToken()
    let payload: string | undefined
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json'
      payload = JSON.stringify(body)
    }
    const send = async (): Promise<Response> => {
      if (token) headers.Authorization = `Bearer ${token}`
      try {
        return await doFetch(`${opts.baseUrl}${path}${buildQuery(params)}`, { method, headers, body: payload })
      } catch (e) {
        throw new ApiError(0, 'network_error', `network error: ${e instanceof Error ? e.message : String(e)}`)
      }
    }
    let res = await send()
    if (res.status === 401 && token && opts.refresh) {
      // The token was refused (expired, a rotated key): once more with a
      // new one, if the session can buy it.
      const next = await opts.refresh(token)
      if (next && next !== token) {
        token = next
        res = await send()
      }
    }
    if (!res.ok) {
      const err = await errorFrom(res)
      if (res.status === 401) opts.onUnauthorized?.()
      throw err
    }
    return res
  }

  async function json<T>(res: Response): Promise<T> {
    if (res.status === 204) return undefined as T
    const text = await res.text()
    if (!text) return undefined as T
    try {
      return JSON.parse(text) as T
    } catch {
      throw new ApiError(res.status, 'invalid_response', 'the service answered with something that is not JSON')
    }
  }

  return {
    get: async <T>(path: string, params?: QueryParams) => json<T>(await request('GET', path, undefined, params)),
    post: async <T>(path: string, body?: unknown, params?: QueryParams) => json<T>(await request('POST', path, body, params)),
    put: async <T>(path: string, body?: unknown) => json<T>(await request('PUT', path, body)),
    delete: async <T>(path: string, params?: QueryParams) => json<T>(await request('DELETE', path, undefined, params)),
    text: async (path: string) => (await request('GET', path, undefined, undefined, 'text/plain')).text(),
  }
}

/**
 * The body of a bulk action (re-queue, retry): the filter without its empty
 * fields, or `{ all: true }` when nothing is left. The services refuse a bulk
 * action with neither a filter nor an explicit `all`, so that an empty body
 * never acts on every row by accident; the dashboard says `all` on purpose.
 */
export function bulkBody(filter: object): Record<string, unknown> {
  const body = Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined && v !== null && v !== ''))
  return Object.keys(body).length > 0 ? body : { all: true }
}
