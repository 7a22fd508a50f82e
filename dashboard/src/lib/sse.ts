// A parser of server-sent events (the text/event-stream format) fed with
// the chunks of a fetch stream: EventSource cannot send the Authorization
// header the dashboard server's GET /api/live needs, so the live tail reads
// the stream with fetch and parses it here.

export interface SSEEvent {
  event: string
  data: string
  id?: string
}

/**
 * Returns a function to feed text chunks to; it calls onEvent for each
 * complete event (blank-line terminated). Comment lines (": heartbeat")
 * are skipped; an event without a name is "message"; several data lines
 * are joined with newlines.
 */
export function createSSEParser(onEvent: (e: SSEEvent) => void): (chunk: string) => void {
  let buffer = ''
  let event = ''
  let data: string[] = []
  let id: string | undefined
  const dispatch = () => {
    if (data.length > 0) onEvent({ event: event || 'message', data: data.join('\n'), ...(id !== undefined ? { id } : {}) })
    event = ''
    data = []
    id = undefined
  }
  return (chunk: string) => {
    buffer += chunk
    let nl: number
    while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1))
      if (line === '') {
        dispatch()
        continue
      }
      if (line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const field = colon < 0 ? line : line.slice(0, colon)
      let value = colon < 0 ? '' : line.slice(colon + 1)
      if (value.startsWith(' ')) value = value.slice(1)
      if (field === 'event') event = value
      else if (field === 'data') data.push(value)
      else if (field === 'id') id = value
    }
  }
}
