import { computed, ref, watch, type WatchSource } from 'vue'

/**
 * Cursor pagination for APIs that return a next_cursor: a stack of the
 * cursors of the pages seen, so Previous goes back without the API having to
 * page backwards. Whenever `resetOn` changes (a new filter, another index)
 * paging starts again from the first page.
 */
export function useCursorPages(resetOn?: WatchSource) {
  const stack = ref<(string | undefined)[]>([undefined])
  /** The cursor of the current page; undefined on the first page. */
  const cursor = computed(() => stack.value[stack.value.length - 1])
  /** The 1-based number of the current page. */
  const page = computed(() => stack.value.length)
  const hasPrevious = computed(() => stack.value.length > 1)

  /** Moves to the page after the current one; a missing cursor is the end. */
  function next(nextCursor: string | null | undefined): void {
    if (nextCursor) stack.value = [...stack.value, nextCursor]
  }
  function previous(): void {
    if (stack.value.length > 1) stack.value = stack.value.slice(0, -1)
  }
  function reset(): void {
    stack.value = [undefined]
  }
  if (resetOn) watch(resetOn, reset, { deep: true })
  return { cursor, page, hasPrevious, next, previous, reset }
}
