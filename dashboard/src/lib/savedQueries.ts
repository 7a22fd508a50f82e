// The Query Explorer's saved queries: named, kept in this browser's
// localStorage (they are the operator's own, not shared), each the index and
// the text of a query. Loading one puts both in the URL (?qi=&qt=), so a
// saved query is also a link.

/** One saved query. */
export interface SavedQuery {
  name: string
  index: string
  text: string
  savedAt: string
}

export const SAVED_QUERIES_KEY = 'nc-saved-queries'
/** The most queries kept; saving beyond drops the oldest. */
export const MAX_SAVED_QUERIES = 100
/** The longest name accepted. */
export const MAX_NAME_LENGTH = 80

/** The storage saved queries live in (localStorage; a Map in tests). */
export type QueryStorage = Pick<Storage, 'getItem' | 'setItem'>

const isSaved = (v: unknown): v is SavedQuery => {
  if (!v || typeof v !== 'object') return false
  const q = v as Record<string, unknown>
  return typeof q.name === 'string' && typeof q.index === 'string' && typeof q.text === 'string' && typeof q.savedAt === 'string'
}

/** The saved queries, sorted by name; anything unreadable is left out. */
export function loadSavedQueries(storage: QueryStorage): SavedQuery[] {
  try {
    const raw = storage.getItem(SAVED_QUERIES_KEY)
    const list: unknown = raw ? JSON.parse(raw) : []
    return Array.isArray(list) ? list.filter(isSaved).sort((a, b) => a.name.localeCompare(b.name)) : []
  } catch {
    return []
  }
}

function store(storage: QueryStorage, list: SavedQuery[]): void {
  try {
    storage.setItem(SAVED_QUERIES_KEY, JSON.stringify(list))
  } catch {
    // Private mode or a full storage: the list lasts as long as the tab.
  }
}

/** Why a name cannot be used, or null. */
export function savedQueryNameProblem(name: string): string | null {
  const n = name.trim()
  if (!n) return 'Give the query a name'
  if (n.length > MAX_NAME_LENGTH) return `A name is at most ${MAX_NAME_LENGTH} characters`
  return null
}

/**
 * Saves a query under name (trimmed), replacing one of the same name, and
 * returns the new list; the oldest are dropped past MAX_SAVED_QUERIES.
 */
export function saveQuery(storage: QueryStorage, q: { name: string; index: string; text: string }, now: Date = new Date()): SavedQuery[] {
  const name = q.name.trim()
  const problem = savedQueryNameProblem(name)
  if (problem) throw new Error(problem)
  const others = loadSavedQueries(storage).filter((s) => s.name !== name)
  const kept = [...others, { name, index: q.index, text: q.text.trim(), savedAt: now.toISOString() }]
    .sort((a, b) => b.savedAt.localeCompare(a.savedAt))
    .slice(0, MAX_SAVED_QUERIES)
  store(storage, kept)
  return loadSavedQueries(storage)
}

/** Removes the query of that name and returns the new list. */
export function removeSavedQuery(storage: QueryStorage, name: string): SavedQuery[] {
  store(storage, loadSavedQueries(storage).filter((s) => s.name !== name))
  return loadSavedQueries(storage)
}
