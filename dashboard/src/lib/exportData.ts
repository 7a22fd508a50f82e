// Lists as files an operator can take away: CSV (RFC 4180, objects and
// arrays as JSON in their cell) or JSON, and every page of a cursor-paged
// list, up to a bound.

/** The most rows an export collects from a paged list. */
export const EXPORT_LIMIT = 10_000

export type ExportFormat = 'csv' | 'json'

const cell = (v: unknown): string => {
  const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

/** Rows as CSV with a header line: the given columns, or every key the rows have, in first-seen order. */
export function toCSV(rows: object[], columns?: string[]): string {
  const recs = rows as Record<string, unknown>[]
  const cols = columns ?? [...new Set(recs.flatMap((r) => Object.keys(r)))]
  return [cols.map(cell).join(','), ...recs.map((r) => cols.map((c) => cell(r[c])).join(','))].join('\r\n') + '\r\n'
}

export function serialize(rows: object[], format: ExportFormat): string {
  return format === 'csv' ? toCSV(rows) : `${JSON.stringify(rows, null, 2)}\n`
}

/**
 * Every entry of a cursor-paged list, page after page, up to limit
 * (`more` when the list holds more).
 */
export async function collectPages<T>(
  page: (cursor: string | undefined) => Promise<{ entries: T[]; next_cursor: string | null }>,
  limit = EXPORT_LIMIT,
): Promise<{ entries: T[]; more: boolean }> {
  const entries: T[] = []
  let cursor: string | undefined
  for (;;) {
    const p = await page(cursor)
    entries.push(...p.entries)
    if (!p.next_cursor) return { entries, more: false }
    if (entries.length >= limit) return { entries, more: true }
    cursor = p.next_cursor
  }
}

/** Saves text as a file through the browser. */
export function download(filename: string, text: string, format: ExportFormat): void {
  downloadText(filename, text, format === 'csv' ? 'text/csv;charset=utf-8' : 'application/json')
}

/** Saves text of a media type as a file through the browser. */
export function downloadText(filename: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const a = document.createElement('a')
  a.href = url
  a.download = filename
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 0)
}
