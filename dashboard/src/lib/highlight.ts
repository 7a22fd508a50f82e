import type { Highlight } from '@/types/classifier'

export interface Segment {
  text: string
  /** The keyword this span matched, when it is a highlight. */
  keyword?: string
}

/**
 * Splits text into plain and highlighted segments from the playground's
 * highlights (UTF-16 offsets). Overlapping or out-of-range spans are merged
 * or clipped, so the segments always concatenate back to text.
 */
export function segmentText(text: string, highlights: Pick<Highlight, 'start' | 'end' | 'keyword'>[]): Segment[] {
  const spans = highlights
    .map((h) => ({ start: Math.max(0, h.start), end: Math.min(text.length, h.end), keyword: h.keyword }))
    .filter((h) => h.end > h.start)
    .sort((a, b) => a.start - b.start || b.end - a.end)
  const out: Segment[] = []
  let pos = 0
  for (const s of spans) {
    if (s.end <= pos) continue
    const start = Math.max(s.start, pos)
    if (start > pos) out.push({ text: text.slice(pos, start) })
    out.push({ text: text.slice(start, s.end), keyword: s.keyword })
    pos = s.end
  }
  if (pos < text.length) out.push({ text: text.slice(pos) })
  return out
}
