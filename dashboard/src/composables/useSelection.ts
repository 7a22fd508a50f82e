import { computed, ref, type Ref } from 'vue'

/**
 * Row selection for tables with bulk actions. Selected ids that disappear
 * from the rows (retried, deleted, filtered away) are dropped by prune.
 */
export function useSelection<T extends string | number>(rowIds: Ref<T[]>) {
  const selected = ref(new Set<T>()) as Ref<Set<T>>
  const count = computed(() => selected.value.size)
  const allSelected = computed(() => rowIds.value.length > 0 && rowIds.value.every((id) => selected.value.has(id)))
  const someSelected = computed(() => count.value > 0 && !allSelected.value)

  function isSelected(id: T): boolean {
    return selected.value.has(id)
  }
  function toggle(id: T, on?: boolean): void {
    const next = new Set(selected.value)
    const want = on ?? !next.has(id)
    if (want) next.add(id)
    else next.delete(id)
    selected.value = next
  }
  function toggleAll(): void {
    selected.value = allSelected.value ? new Set() : new Set(rowIds.value)
  }
  function clear(): void {
    selected.value = new Set()
  }
  function prune(): void {
    const present = new Set(rowIds.value)
    const next = new Set([...selected.value].filter((id) => present.has(id)))
    if (next.size !== selected.value.size) selected.value = next
  }
  const ids = computed(() => [...selected.value])
  return { selected, ids, count, allSelected, someSelected, isSelected, toggle, toggleAll, clear, prune }
}
