/** Case-insensitive substring search over a row's ids; empty matches all. */
export function matchesIdSearch(search: string, ...ids: string[]): boolean {
  const q = search.trim().toLowerCase()
  return !q || ids.some((id) => id.toLowerCase().includes(q))
}

/**
 * The auto-refresh interval of a table: off while rows are selected, so
 * the rows do not move under the operator's bulk action.
 */
export function refreshInterval(ms: number, selectedCount: number): number | false {
  return selectedCount > 0 ? false : ms
}
