// Which optional columns of a table the operator hides, remembered per user
// in localStorage (nc-columns:<user>:<table>), so a laptop shows the
// columns that matter to whoever is signed in.
import { computed, ref, watch } from 'vue'
import { session } from '@/auth/session'

export const columnsKey = (user: string, table: string) => `nc-columns:${user}:${table}`

function load(key: string, known: string[]): string[] {
  try {
    const raw = JSON.parse(localStorage.getItem(key) ?? 'null') as unknown
    return Array.isArray(raw) ? raw.filter((k): k is string => typeof k === 'string' && known.includes(k)) : []
  } catch {
    return []
  }
}

/** The hidden columns of table (keys of known), and a toggle that remembers them. */
export function useColumnChoice(table: string, known: string[], hiddenByDefault: string[] = []) {
  const key = computed(() => columnsKey(session.current.value?.user ?? '', table))
  const stored = () => localStorage.getItem(key.value) === null ? [...hiddenByDefault] : load(key.value, known)
  const hidden = ref<string[]>(stored())
  watch(key, () => { hidden.value = stored() })
  const save = () => localStorage.setItem(key.value, JSON.stringify(hidden.value))
  return {
    hidden,
    shown: (col: string) => !hidden.value.includes(col),
    toggle(col: string) {
      hidden.value = hidden.value.includes(col) ? hidden.value.filter((k) => k !== col) : [...hidden.value, col]
      save()
    },
  }
}
