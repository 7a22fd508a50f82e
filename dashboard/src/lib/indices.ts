import type { IndexSummary } from '@/types/indexManager'
import { formatBytes } from './format'

/** Filters the index list by type and a case-insensitive name search. */
export function filterIndices(list: IndexSummary[], search: string, type: 'all' | IndexSummary['index_type']): IndexSummary[] {
  const q = search.trim().toLowerCase()
  return list
    .filter((idx) => type === 'all' || idx.index_type === type)
    .filter((idx) => !q || idx.name.toLowerCase().includes(q))
    .sort((a, b) => a.name.localeCompare(b.name))
}

/** The stat cards: index count, documents and storage. */
export function summarizeIndices(list: IndexSummary[]): { total: number; docs: number; storage: string } {
  const docs = list.reduce((s, i) => s + i.doc_count, 0)
  const bytes = list.reduce((s, i) => s + i.storage_bytes, 0)
  return { total: list.length, docs, storage: formatBytes(bytes) }
}
