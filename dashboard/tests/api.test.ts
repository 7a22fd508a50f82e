import { describe, expect, it, vi } from 'vitest'
import { ApiError, buildQuery, createHttpClient } from '@/api/http'
import { createIndexManagerApi } from '@/api/indexManager'
import { createClassifierApi } from '@/api/classifier'
import { createPublisherApi } from '@/api/publisher'
import { fetchRuntimeConfig } from '@/api/client'

function fakeFetch(status = 200, body: unknown = {}, contentType = 'application/json') {
  return vi.fn(async (_url: RequestInfo | URL, _init?: RequestInit) =>
    new Response(status === 204 ? null : typeof body === 'string' ? body : JSON.stringify(body), { status, headers: { 'Content-Type': contentType } }),
  )
}

function client(f: ReturnType<typeof fakeFetch>, token: string | null = 'tok', onUnauthorized = vi.fn()) {
  return { http: createHttpClient({ baseUrl: '/base', getToken: () => token, onUnauthorized, fetch: f as unknown as typeof fetch }), onUnauthorized }
}

describe('buildQuery', () => {
  it('leaves out empty values and encodes the rest', () => {
    expect(buildQuery({ a: 1, b: '', c: undefined, d: null, e: false, f: 'x y', g: ['1', '2'] })).toBe('?a=1&e=false&f=x+y&g=1&g=2')
    expect(buildQuery({})).toBe('')
    expect(buildQuery()).toBe('')
  })
})

describe('createHttpClient', () => {
  it('sends the bearer token and JSON body', async () => {
    const f = fakeFetch(200, { ok: true })
    const { http } = client(f)
    await expect(http.post('/x', { a: 1 }, { q: 'v' })).resolves.toEqual({ ok: true })
    const [url, init] = f.mock.calls[0]!
    expect(url).toBe('/base/x?q=v')
    expect(init?.method).toBe('POST')
    expect((init?.headers as Record<string, string>).Authorization).toBe('Bearer tok')
    expect(init?.body).toBe('{"a":1}')
  })

  it('omits Authorization without a token', async () => {
    const f = fakeFetch()
    await client(f, null).http.get('/x')
    expect((f.mock.calls[0]![1]?.headers as Record<string, string>).Authorization).toBeUndefined()
  })

  it('turns the services error shape into ApiError', async () => {
    const f = fakeFetch(400, { error: { code: 'invalid_request', message: 'index name must be lowercase' } })
    const err = await client(f).http.get('/x').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ status: 400, code: 'invalid_request', message: 'index name must be lowercase' })
  })

  it('calls onUnauthorized on 401 and still rejects', async () => {
    const f = fakeFetch(401, { error: { code: 'unauthorized', message: 'token expired' } })
    const { http, onUnauthorized } = client(f)
    await expect(http.get('/x')).rejects.toMatchObject({ status: 401, isUnauthorized: true })
    expect(onUnauthorized).toHaveBeenCalledOnce()
  })

  it('reports network failures and non-JSON errors', async () => {
    const down = vi.fn(async () => { throw new TypeError('fetch failed') })
    const http = createHttpClient({ baseUrl: '', getToken: () => null, fetch: down as unknown as typeof fetch })
    await expect(http.get('/x')).rejects.toMatchObject({ status: 0, code: 'network_error' })
    const bad = fakeFetch(502, 'Bad Gateway', 'text/plain')
    await expect(client(bad).http.get('/x')).rejects.toMatchObject({ status: 502, message: expect.stringContaining('service unavailable') })
  })

  it('returns undefined for 204 and text for text()', async () => {
    await expect(client(fakeFetch(204)).http.delete('/x')).resolves.toBeUndefined()
    await expect(client(fakeFetch(200, 'm 1\n', 'text/plain')).http.text('/metrics')).resolves.toBe('m 1\n')
  })
})

describe('service clients', () => {
  it('index-manager paths follow its API and escape names', async () => {
    const f = fakeFetch(200, {})
    const api = createIndexManagerApi(client(f).http)
    await api.listIndices()
    await api.getIndex('a_raw_content')
    await api.deleteIndex('a/b_raw_content', true)
    await api.refreshIndex('a_raw_content')
    await api.queryDocuments('a_raw_content', { query: { match_all: {} }, size: 5 })
    await api.getDocument('a_raw_content', 'id with space')
    await api.listDocuments('a_raw_content', { size: 10, cursor: 'c1' })
    await api.listAudit({ action: 'delete', limit: 50 })
    await api.login({ username: 'u', password: 'p' })
    // One count over every classified index (the Overview's last hour).
    await api.countContent({ index_type: 'classified_content', field: 'classified_at', gte: 'now-1h' })
    // Index maintenance.
    await api.listAliases()
    await api.putAlias('a_raw_content', 'news')
    await api.deleteAlias('a_raw_content', 'news')
    await api.forceMerge('a_raw_content')
    await api.getTask('node-1:42')
    const calls = f.mock.calls.map(([u, i]) => `${i?.method} ${String(u)}`)
    expect(calls).toEqual([
      'GET /base/indices',
      'GET /base/indices/a_raw_content',
      'DELETE /base/indices/a%2Fb_raw_content?confirm=true',
      'POST /base/indices/a_raw_content/_refresh',
      'POST /base/indices/a_raw_content/_query',
      'GET /base/indices/a_raw_content/documents/id%20with%20space',
      'GET /base/indices/a_raw_content/documents?size=10&cursor=c1',
      'GET /base/audit?action=delete&limit=50',
      'POST /base/auth/login',
      'GET /base/content/_count?index_type=classified_content&field=classified_at&gte=now-1h',
      'GET /base/aliases',
      'PUT /base/indices/a_raw_content/aliases/news',
      'DELETE /base/indices/a_raw_content/aliases/news',
      'POST /base/indices/a_raw_content/_forcemerge',
      'GET /base/tasks/node-1%3A42',
    ])
  })

  it('classifier paths: rules, playground, DLQ, sources, stats', async () => {
    const f = fakeFetch(200, {})
    const api = createClassifierApi(client(f).http)
    await api.listRules({ topic: 'crime', enabled: false })
    await api.setRuleEnabled(3, true)
    await api.setRuleEnabled(3, false)
    await api.testRules({ title: 't' })
    await api.listDeadLetters({ source: 's', exhausted: true, cursor: 'c' })
    await api.listDeadLetters({ content_id: 'a/b', index: 'x_raw_content', limit: 10 })
    await api.requeueDeadLetter('x-1')
    await api.requeueDeadLetters({ error_code: 'VALIDATION_ERROR' })
    await api.deleteDeadLetter('x-1')
    await api.stats()
    await api.sourceStats()
    await api.getSourcePriority('a_b')
    await api.setSourcePriority('a_b', 'low')
    await api.reprocessSource('a_b')
    await api.listReprocessTasks('a_b')
    await api.getReprocessTask('a_b', 't-1')
    await api.cancelReprocessTask('a_b', 't-1')
    const calls = f.mock.calls.map(([u, i]) => `${i?.method} ${String(u)}${i?.body ? ` ${String(i.body)}` : ''}`)
    expect(calls).toEqual([
      'GET /base/api/v1/rules?topic=crime&enabled=false',
      'POST /base/api/v1/rules/3/enable',
      'POST /base/api/v1/rules/3/disable',
      'POST /base/api/v1/rules/test {"title":"t"}',
      'GET /base/api/v1/dlq?source=s&exhausted=true&cursor=c',
      'GET /base/api/v1/dlq?content_id=a%2Fb&index=x_raw_content&limit=10',
      'POST /base/api/v1/dlq/x-1/requeue',
      'POST /base/api/v1/dlq/requeue {"error_code":"VALIDATION_ERROR"}',
      'DELETE /base/api/v1/dlq/x-1',
      'GET /base/api/v1/stats?window=1h&interval=1m',
      'GET /base/api/v1/sources/stats',
      'GET /base/api/v1/sources/a_b/priority',
      'PUT /base/api/v1/sources/a_b/priority {"priority":"low"}',
      'POST /base/api/v1/sources/a_b/reprocess {}',
      'GET /base/api/v1/sources/a_b/reprocess',
      'GET /base/api/v1/sources/a_b/reprocess/t-1',
      'POST /base/api/v1/sources/a_b/reprocess/t-1/cancel {}',
    ])
  })

  it('publisher paths', async () => {
    const f = fakeFetch(200, {})
    const api = createPublisherApi(client(f).http)
    await api.outboxStats()
    await api.outboxStats({ source_contains: 'Ab', channel: 'articles:news' })
    await api.listOutbox({ status: 'failed', channel: 'articles:news' })
    await api.listOutbox({ content_id: 'a b', index: 'x_classified_content' })
    await api.retryOutbox('u-1')
    await api.retryOutboxMatching({ exhausted: true })
    await api.channels()
    expect(f.mock.calls.map(([u, i]) => `${i?.method} ${String(u)}`)).toEqual([
      'GET /base/api/v1/outbox/stats',
      'GET /base/api/v1/outbox/stats?source_contains=Ab&channel=articles%3Anews',
      'GET /base/api/v1/outbox?status=failed&channel=articles%3Anews',
      'GET /base/api/v1/outbox?content_id=a+b&index=x_classified_content',
      'POST /base/api/v1/outbox/u-1/retry',
      'POST /base/api/v1/outbox/retry',
      'GET /base/api/v1/channels',
    ])
  })

  it('runtime config defaults to writable when the server has none', async () => {
    await expect(fetchRuntimeConfig(fakeFetch(200, { read_only: true }) as unknown as typeof fetch)).resolves.toEqual({ read_only: true })
    await expect(fetchRuntimeConfig(fakeFetch(404, 'no') as unknown as typeof fetch)).resolves.toEqual({ read_only: false })
  })
})
