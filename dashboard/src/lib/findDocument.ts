// One id, every place the pipeline holds it: the raw and classified
// indices, the outbox and the dead-letter queue. The outbox and the queue
// are asked by exact content id and name the document's indices; only when
// neither knows the id are the raw indices searched (an ids query each, a
// few at a time), since the id alone does not say its source. A service
// that fails is named, and the places the others hold are still listed.
import type { DeadLetterEntry } from '@/types/classifier'
import type { OutboxEntry } from '@/types/publisher'
import { documentPath, twinIndices } from './documents'
import { pooled } from './pool'

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

export interface FindDeps {
  outbox: (id: string) => Promise<OutboxEntry[]>
  deadLetters: (id: string) => Promise<DeadLetterEntry[]>
  rawIndices: () => Promise<string[]>
  /** Whether the index holds a document of this id. */
  holds: (index: string, id: string) => Promise<boolean>
}

const json = (v: unknown) => encodeURIComponent(JSON.stringify(v))

/** The Query Explorer on one index, asking for one id. */
export function explorerPath(index: string, id: string): string {
  return `/indices?tab=query&qi=${encodeURIComponent(index)}&qt=${json({ ids: { values: [id] } })}`
}

export async function findDocument(id: string, deps: FindDeps): Promise<FindResult> {
  const failures: FindResult['failures'] = []
  const attempt = async <T>(service: string, fn: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await fn()
    } catch (e) {
      failures.push({ service, message: e instanceof Error ? e.message : String(e) })
      return fallback
    }
  }
  const [outbox, dlq] = await Promise.all([
    attempt('publisher', () => deps.outbox(id), [] as OutboxEntry[]),
    attempt('classifier', () => deps.deadLetters(id), [] as DeadLetterEntry[]),
  ])
  const sources = new Set<string>()
  for (const name of [...outbox.map((o) => o.index), ...dlq.map((e) => e.index_name)]) {
    const twins = twinIndices(name)
    if (twins) sources.add(twins.raw)
  }
  if (sources.size === 0) {
    const raws = await attempt('index-manager', deps.rawIndices, [] as string[])
    const held = await pooled(raws.map((r) => () => attempt('index-manager', () => deps.holds(r, id), false)))
    raws.forEach((r, i) => { if (held[i]) sources.add(r) })
  }
  const places: Place[] = []
  for (const raw of [...sources].sort()) {
    const twins = twinIndices(raw)!
    const [inRaw, inClassified] = await Promise.all([
      attempt('index-manager', () => deps.holds(twins.raw, id), false),
      attempt('index-manager', () => deps.holds(twins.classified, id), false),
    ])
    if (inRaw) places.push({ kind: 'raw', index: twins.raw, to: documentPath(twins.raw, id), detail: 'raw document' })
    if (inClassified) places.push({ kind: 'classified', index: twins.classified, to: explorerPath(twins.classified, id), detail: 'classified' })
  }
  for (const o of outbox) places.push({ kind: 'outbox', index: o.index, to: `/outbox?content_id=${encodeURIComponent(id)}`, detail: `${o.status} on ${o.channel}` })
  for (const e of dlq) {
    places.push({ kind: 'dlq', index: e.index_name, to: `/dlq?content_id=${encodeURIComponent(id)}&open=${encodeURIComponent(e.id)}`, detail: `${e.error_code}${e.exhausted ? ', exhausted' : ''}` })
  }
  return { places, failures: [...new Map(failures.map((f) => [f.service, f])).values()] }
}
