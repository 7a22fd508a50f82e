import { describe, expect, it } from 'vitest'
import { defineComponent, nextTick } from 'vue'
import { flushPromises, mount } from '@vue/test-utils'
import { createSSEParser, type SSEEvent } from '@/lib/sse'
import { channelOptions, onChannel, parseMessage, prepend, reconnectDelay, type LiveMessage } from '@/lib/liveTail'
import { useLiveTail } from '@/composables/useLiveTail'
import { session } from '@/auth/session'

const msg = (id: string, channel = 'articles:news'): LiveMessage => ({ id, channel, title: id, source: 's', topics: [] })

describe('server-sent events parser', () => {
  it('joins chunks split anywhere, skips comments, names unnamed events "message"', () => {
    const got: SSEEvent[] = []
    const feed = createSSEParser((e) => got.push(e))
    const text = 'event: ready\ndata: {"a":1}\n\n: heartbeat\n\nevent: message\nid: 7\ndata: one\ndata: two\n\ndata: plain\r\n\r\n'
    for (const ch of text) feed(ch)
    expect(got).toEqual([
      { event: 'ready', data: '{"a":1}' },
      { event: 'message', data: 'one\ntwo', id: '7' },
      { event: 'message', data: 'plain' },
    ])
  })
})

describe('live tail list', () => {
  it('keeps the newest first and at most max', () => {
    expect(prepend([msg('a')], [msg('b'), msg('c')], 2).map((m) => m.id)).toEqual(['c', 'b'])
  })
  it('filters by an exact channel or a pattern', () => {
    expect(onChannel(msg('a', 'articles:crime:violent_crime'), 'articles:*')).toBe(true)
    expect(onChannel(msg('a', 'content:video'), 'articles:*')).toBe(false)
    expect(onChannel(msg('a', 'content:video'), 'content:video')).toBe(true)
    expect(onChannel(msg('a', 'content:video'), '')).toBe(true)
    expect(channelOptions(['articles:news'], ['content:video', 'articles:news']).map((o) => o.value)).toEqual(['', 'articles:*', 'content:*', 'articles:news', 'content:video'])
  })
  it('reads a message event, and refuses what is not one', () => {
    expect(parseMessage('{"channel":"articles:news","id":"x","topics":["a",1]}')).toMatchObject({ channel: 'articles:news', id: 'x', title: '', topics: ['a'] })
    expect(parseMessage('nope')).toBeNull()
    expect(parseMessage('{"id":"x"}')).toBeNull()
  })
  it('backs off from 1 s to 30 s', () => {
    expect([1, 2, 3, 6, 10].map(reconnectDelay)).toEqual([1000, 2000, 4000, 30000, 30000])
  })
})

/** A stream GET /api/live could send, held open until close() is called. */
function stream() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>
  const body = new ReadableStream<Uint8Array>({ start: (c) => { ctl = c } })
  const enc = new TextEncoder()
  return {
    body,
    send: (name: string, data: unknown) => ctl.enqueue(enc.encode(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)),
  }
}

describe('useLiveTail', () => {
  it('shows arriving messages, holds them while paused, counts drops, and sends the token', async () => {
    session.start({ token: 'tok', expiresAt: new Date(Date.now() + 3600_000).toISOString(), user: 'u' })
    const s = stream()
    const seen: RequestInit[] = []
    const fetchImpl = (async (_url: string, init: RequestInit) => {
      seen.push(init)
      return new Response(s.body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } })
    }) as unknown as typeof fetch
    let tail!: ReturnType<typeof useLiveTail>
    const w = mount(defineComponent({ setup() { tail = useLiveTail('/api/live', fetchImpl); return () => null } }))
    s.send('ready', { reads_bodies: false })
    s.send('message', msg('one'))
    await waitFor(() => tail.messages.value.length === 1)
    expect(tail.status.value).toBe('open')
    expect(tail.readsBodies.value).toBe(false)
    tail.pause()
    s.send('message', msg('two'))
    s.send('dropped', { dropped: 3 })
    await waitFor(() => tail.held.value.length === 1 && tail.dropped.value === 3)
    expect(tail.messages.value.map((m) => m.id)).toEqual(['one'])
    tail.resume()
    await nextTick()
    expect(tail.messages.value.map((m) => m.id)).toEqual(['two', 'one'])
    expect(seen[0]?.headers).toMatchObject({ Accept: 'text/event-stream', Authorization: 'Bearer tok' })
    w.unmount()
  })
})

async function waitFor(cond: () => boolean) {
  for (let i = 0; i < 200 && !cond(); i++) {
    await flushPromises()
    await new Promise((r) => setTimeout(r, 5))
  }
  expect(cond()).toBe(true)
}
