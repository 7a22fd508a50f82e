// The live tail's stream: GET /api/live read with fetch (EventSource cannot
// send the bearer token), parsed as server-sent events. It reconnects when
// the server ends the stream (its maximum duration) or the connection
// drops, with backoff; it stops on a refusal (401 ends the session, 403
// says why). Pausing keeps the list still and holds the arrivals (bounded)
// until resume. The stream is closed when the component unmounts.
import { onBeforeUnmount, ref, shallowRef } from 'vue'
import { session } from '@/auth/session'
import { createSSEParser } from '@/lib/sse'
import { MAX_MESSAGES, parseMessage, prepend, reconnectDelay, type LiveMessage } from '@/lib/liveTail'

export type LiveStatus = 'connecting' | 'open' | 'reconnecting' | 'refused'

export function useLiveTail(url = '/api/live', fetchImpl: typeof fetch = (i, init) => globalThis.fetch(i, init)) {
  const messages = shallowRef<LiveMessage[]>([])
  const held = shallowRef<LiveMessage[]>([])
  const paused = ref(false)
  const status = ref<LiveStatus>('connecting')
  const error = ref<string | null>(null)
  /** Messages the server dropped because this tab fell behind, and those the pause buffer let go. */
  const dropped = ref(0)
  const readsBodies = ref<boolean | null>(null)
  const seenChannels = ref<string[]>([])

  let controller: AbortController | null = null
  let timer: ReturnType<typeof setTimeout> | null = null
  let failures = 0
  let stopped = false

  function arrive(m: LiveMessage) {
    if (!seenChannels.value.includes(m.channel)) seenChannels.value = [...seenChannels.value, m.channel]
    if (paused.value) {
      const next = [...held.value, m]
      if (next.length > MAX_MESSAGES) dropped.value += next.length - MAX_MESSAGES
      held.value = next.slice(-MAX_MESSAGES)
      return
    }
    messages.value = prepend(messages.value, [m])
  }

  function schedule(delay: number) {
    if (stopped) return
    status.value = 'reconnecting'
    timer = setTimeout(() => void connect(), delay)
  }

  async function connect() {
    if (stopped) return
    controller?.abort()
    controller = new AbortController()
    status.value = failures > 0 ? 'reconnecting' : 'connecting'
    const headers: Record<string, string> = { Accept: 'text/event-stream' }
    const token = await session.freshToken()
    if (token) headers.Authorization = `Bearer ${token}`
    let res: Response
    try {
      res = await fetchImpl(url, { headers, signal: controller.signal })
    } catch (e) {
      if (controller.signal.aborted) return
      failures++
      error.value = `network error: ${e instanceof Error ? e.message : String(e)}`
      schedule(reconnectDelay(failures))
      return
    }
    if (!res.ok || !res.body) {
      let message = `HTTP ${res.status}`
      try {
        const body = (await res.json()) as { error?: { message?: string } }
        if (body.error?.message) message = body.error.message
      } catch {
        // keep the status
      }
      error.value = message
      if (res.status === 401) {
        // Once more with a refreshed token, if the session can buy one.
        const used = token
        if (used && (await session.refresh(used)) !== null && session.token() !== used && !stopped) {
          schedule(0)
          return
        }
        status.value = 'refused'
        session.end('expired')
        return
      }
      if (res.status === 403) {
        status.value = 'refused'
        return
      }
      failures++
      const retryAfter = Number(res.headers.get('Retry-After'))
      schedule(retryAfter > 0 ? retryAfter * 1000 : reconnectDelay(failures))
      return
    }
    let ended = false
    const parse = createSSEParser((e) => {
      if (e.event === 'ready') {
        failures = 0
        error.value = null
        status.value = 'open'
        try {
          readsBodies.value = (JSON.parse(e.data) as { reads_bodies?: boolean }).reads_bodies === true
        } catch {
          readsBodies.value = null
        }
      } else if (e.event === 'message') {
        const m = parseMessage(e.data)
        if (m) arrive(m)
      } else if (e.event === 'dropped') {
        try {
          dropped.value += Number((JSON.parse(e.data) as { dropped?: number }).dropped) || 0
        } catch {
          // not a count
        }
      } else if (e.event === 'end') {
        ended = true
      }
    })
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        parse(value)
      }
    } catch {
      if (controller.signal.aborted) return
    }
    if (stopped || controller.signal.aborted) return
    // The server ended the stream (its maximum duration, or it is
    // stopping) or the connection dropped: open a new one.
    if (!ended) failures++
    schedule(ended ? 1000 : reconnectDelay(failures))
  }

  function pause() {
    paused.value = true
  }

  function resume() {
    paused.value = false
    messages.value = prepend(messages.value, held.value)
    held.value = []
  }

  function clear() {
    messages.value = []
    held.value = []
    dropped.value = 0
  }

  function stop() {
    stopped = true
    if (timer) clearTimeout(timer)
    controller?.abort()
  }

  void connect()
  onBeforeUnmount(stop)
  return { messages, held, paused, status, error, dropped, readsBodies, seenChannels, pause, resume, clear, stop }
}
