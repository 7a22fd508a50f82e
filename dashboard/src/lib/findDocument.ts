// One id, every place the pipeline holds it: the raw and classified
// indices, the outbox and the dead-letter queue, from one request to the
// dashboard server (GET /api/find), which asks the outbox and the queue by
// content id and, only when neither knows the id, every raw index itself:
// one request whatever the number of sources. A service that failed is
// named, and the places the others hold are still listed.
import type { FindAnswer } from '@/api/dashboard'
import { documentPath } from './documents'

export type PlaceKind = 'raw' | 'classified' | 'outbox' | 'dlq'

export interface Place {
  kind: PlaceKind
  index: string
  /** Where the dashboard shows it. */
  to: string
  /** A word on its state there (status, error code). */
  detail: string
}

export interface FindResult {
  places: Place[]
  /** Services that did not answer, with what they said. */
  failures: { service: string; message: string }[]
}

const json = (v: unknown) => encodeURIComponent(JSON.stringify(v))

/** The Query Explorer on one index, asking for one id. */
export function explorerPath(index: string, id: string): string {
  return `/indices?tab=query&qi=${encodeURIComponent(index)}&qt=${json({ ids: { values: [id] } })}`
}

/** The places of the server's answer, in reading order: indices, outbox rows, dead letters. */
export function placesOf(a: FindAnswer): FindResult {
  const places: Place[] = []
  for (const i of a.indices) {
    places.push(i.kind === 'raw'
      ? { kind: 'raw', index: i.index, to: documentPath(i.index, a.id), detail: 'raw document' }
      : { kind: 'classified', index: i.index, to: explorerPath(i.index, a.id), detail: 'classified' })
  }
  const id = encodeURIComponent(a.id)
  for (const o of a.outbox) places.push({ kind: 'outbox', index: o.index, to: `/outbox?content_id=${id}`, detail: `${o.status} on ${o.channel}` })
  for (const e of a.dead_letters) {
    places.push({ kind: 'dlq', index: e.index_name, to: `/dlq?content_id=${id}&open=${encodeURIComponent(e.id)}`, detail: `${e.error_code}${e.exhausted ? ', exhausted' : ''}` })
  }
  return { places, failures: a.failures }
}
