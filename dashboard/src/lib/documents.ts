// Finding the rows that belong to one document: its twin index, its outbox
// row and its dead-letter history. The publisher and the classifier list
// rows per source, newest first, with no filter by document, so the search
// is a bounded scan of the source's newest rows.
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

export interface Page<T> {
  entries: T[]
  next_cursor: string | null | undefined
}

/**
 * Pages through a cursor listing until `stop` says so or maxPages are read,
 * collecting the entries `match` accepts. scanned counts the rows read.
 */
export async function scanPages<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  match: (e: T) => boolean,
  maxPages: number,
  stop: (e: T) => boolean = () => false,
): Promise<{ found: T[]; scanned: number; complete: boolean }> {
  const found: T[] = []
  let scanned = 0
  let cursor: string | undefined
  for (let i = 0; i < maxPages; i++) {
    const page = await fetchPage(cursor)
    for (const e of page.entries) {
      scanned++
      if (match(e)) found.push(e)
      if (stop(e)) return { found, scanned, complete: true }
    }
    if (!page.next_cursor) return { found, scanned, complete: true }
    cursor = page.next_cursor
  }
  return { found, scanned, complete: false }
}

/** Document text with literal "\n" sequences (as some crawlers store them) turned into line breaks. */
export function readableText(v: unknown): string {
  if (typeof v !== 'string') return ''
  return v.replace(/\\r\\n|\\n/g, '\n').replace(/\r\n/g, '\n')
}
