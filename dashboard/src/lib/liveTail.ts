// The live tail's messages: what GET /api/live sends, and the bounded list
// the view keeps.

/** One message the publisher sent, as the dashboard server's live tail streams it. */
export interface LiveMessage {
  channel: string
  id: string
  index?: string
  title: string
  source: string
  topics: string[]
  content_type?: string
  url?: string
  published_date?: string
  published_at?: string
  version?: number
  /** Only for a caller allowed to read message bodies. */
  body?: string
}

/** The list keeps the newest MAX_MESSAGES; older ones fall off the end. */
export const MAX_MESSAGES = 500

/** Adds arrivals (oldest first) to the front of list, newest first, keeping at most max. */
export function prepend(list: LiveMessage[], arrivals: LiveMessage[], max = MAX_MESSAGES): LiveMessage[] {
  if (arrivals.length === 0) return list
  return [...arrivals.slice().reverse(), ...list].slice(0, max)
}

/** Whether a message is on the chosen channel: exact, or under a prefix ending in ":*" ("articles:*"); "" is every channel. */
export function onChannel(m: LiveMessage, filter: string): boolean {
  if (!filter) return true
  if (filter.endsWith(':*')) return m.channel.startsWith(filter.slice(0, -1))
  return m.channel === filter
}

/** The channel filter's choices: every pattern, then the channels known and seen, sorted. */
export function channelOptions(known: string[], seen: string[]): { value: string; label: string }[] {
  const names = [...new Set([...known, ...seen])].filter(Boolean).sort()
  return [
    { value: '', label: 'Every channel' },
    { value: 'articles:*', label: 'articles:*' },
    { value: 'content:*', label: 'content:*' },
    ...names.map((n) => ({ value: n, label: n })),
  ]
}

/** Reads a message event's data; null for something that is not a message. */
export function parseMessage(data: string): LiveMessage | null {
  try {
    const m = JSON.parse(data) as Partial<LiveMessage>
    if (typeof m.channel !== 'string') return null
    return {
      ...m,
      channel: m.channel,
      id: typeof m.id === 'string' ? m.id : '',
      title: typeof m.title === 'string' ? m.title : '',
      source: typeof m.source === 'string' ? m.source : '',
      topics: Array.isArray(m.topics) ? m.topics.filter((t): t is string => typeof t === 'string') : [],
    }
  } catch {
    return null
  }
}

/** How long to wait before opening the stream again after the n-th failure in a row (1 s doubling to 30 s). */
export function reconnectDelay(failures: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.max(0, failures - 1))
}
