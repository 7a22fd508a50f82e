// One document across the pipeline: its raw and classified twin indices,
// the path of its page, and its text made readable.
import { sourceOfIndex } from './sources'

/** The raw and classified index of the document's source. */
export function twinIndices(index: string): { source: string; raw: string; classified: string } | null {
  const s = sourceOfIndex(index)
  if (!s) return null
  return { source: s.source, raw: `${s.source}_raw_content`, classified: `${s.source}_classified_content` }
}

/** The path of the document page. */
export function documentPath(index: string, id: string): string {
  return `/documents/${encodeURIComponent(index)}/${encodeURIComponent(id)}`
}

/** Document text with literal "\n" sequences (as some crawlers store them) turned into line breaks. */
export function readableText(v: unknown): string {
  if (typeof v !== 'string') return ''
  return v.replace(/\\r\\n|\\n/g, '\n').replace(/\r\n/g, '\n')
}

/**
 * The queue-hygiene fields (seed 004) a document or dead-letter entry
 * carries, in reading order: its URL's class, the processing strategy that
 * class chose, whether it was processable, and why not.
 */
export function hygieneFields(src: Record<string, unknown>): { key: string; label: string; value: string }[] {
  const fields: [string, string][] = [
    ['url_class', 'URL class'], ['processing_strategy', 'processing strategy'], ['is_processable', 'processable'], ['failure_reason', 'failure reason'],
  ]
  return fields
    .filter(([k]) => src[k] !== undefined && src[k] !== null && src[k] !== '')
    .map(([key, label]) => ({ key, label, value: typeof src[key] === 'boolean' ? (src[key] ? 'yes' : 'no') : String(src[key]) }))
}
