import { computed } from 'vue'
import { useQuery } from '@tanstack/vue-query'
import { indexManagerApi } from '@/api/client'
import { allows } from '@/lib/audit'
import type { Role } from '@/types/audit'
import type { Feature } from '@/lib/features'
import { useFeatures } from './useFeatures'
import { useRuntimeConfig } from './useRuntimeConfig'

/** The signed-in user and role, from the index-manager's GET /auth/me. */
export function useMe() {
  return useQuery({ queryKey: ['auth-me'], queryFn: () => indexManagerApi.me(), staleTime: Infinity, retry: false })
}

/**
 * Whether the actions that need the role need are hidden: in a read-only
 * dashboard, and when the signed-in user's role is below need. Until the
 * role and the configuration have loaded, act read-only: never flash a
 * button that is then hidden. The services refuse such actions anyway
 * (403); this only keeps them out of sight. With feature, the actions are
 * also hidden while DASHBOARD_FEATURES turns that feature off.
 */
export function usePermissions(need: Role, feature?: Feature) {
  const { readOnly: serverReadOnly } = useRuntimeConfig()
  const { enabled } = useFeatures()
  const me = useMe()
  const role = computed(() => me.data.value?.role ?? null)
  const readOnly = computed(() => serverReadOnly.value || !allows(role.value, need) || (feature !== undefined && !enabled(feature)))
  return { readOnly, role }
}

/**
 * Whether the signed-in user reads message bodies (GET /auth/me
 * reads_bodies; true until the answer says otherwise, and from an
 * index-manager that does not say), and whether the answer has come.
 */
export function useReadsBodies() {
  const me = useMe()
  const readsBodies = computed(() => me.data.value?.reads_bodies !== false)
  const known = computed(() => me.isSuccess.value || me.isError.value)
  return { readsBodies, known }
}
