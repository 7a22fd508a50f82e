import { ref } from 'vue'

const KEY = 'nc-theme'
const dark = ref(typeof document !== 'undefined' && document.documentElement.classList.contains('dark'))

/** Light and dark mode, remembered in localStorage (index.html applies it before paint). */
export function useTheme() {
  function set(value: boolean) {
    dark.value = value
    document.documentElement.classList.toggle('dark', value)
    try {
      localStorage.setItem(KEY, value ? 'dark' : 'light')
    } catch {
      // ignore
    }
  }
  return { dark, toggle: () => set(!dark.value), set }
}
