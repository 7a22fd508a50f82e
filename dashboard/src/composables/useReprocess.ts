// The reprocess tasks the dashboard follows, one per source: started here,
// or found running in the source's task list. A source's row and its detail
// show the same task, polled every second while it runs; when it ends the
// source figures are read again. The tasks followed are kept in this
// browser's storage, so a reload still shows each row's last reprocess
// (and how far its documents are classified again).
import { computed, reactive, watch } from 'vue'
import { useQuery, useQueryClient } from '@tanstack/vue-query'
import { classifierApi } from '@/api/client'
import type { ReprocessTask } from '@/types/classifier'

interface Followed {
  id: string
  /** Documents the task was expected to touch (the source's classified documents then). */
  estimate: number | null
  status: ReprocessTask['status']
}
const STORAGE_KEY = 'nc-reprocess'

function stored(): [string, Followed][] {
  try {
    const raw = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? '[]') as unknown
    return Array.isArray(raw) ? (raw as [string, Followed][]).filter((e) => typeof e?.[0] === 'string' && typeof e[1]?.id === 'string') : []
  } catch {
    return []
  }
}
const followed = reactive(new Map<string, Followed>(typeof localStorage === 'undefined' ? [] : stored()))
const save = () => {
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify([...followed.entries()]))
  } catch { /* storage full or off: the tasks are followed until a reload */ }
}

export function followReprocess(task: ReprocessTask, estimate: number | null): void {
  followed.set(task.source, { id: task.id, estimate, status: task.status })
  save()
}

/** Whether the dashboard follows a task of this source. */
export const isFollowed = (source: string) => followed.has(source)

/** Whether any followed task runs (the view then reads its figures more often). */
export const anyReprocessRunning = computed(() => [...followed.values()].some((f) => f.status === 'running'))

export function useReprocessTask(source: () => string) {
  const queryClient = useQueryClient()
  const current = computed(() => followed.get(source()) ?? null)
  const task = useQuery({
    queryKey: computed(() => ['reprocess', source(), current.value?.id]),
    queryFn: () => classifierApi.getReprocessTask(source(), current.value!.id),
    enabled: computed(() => !!current.value),
    refetchInterval: (q) => (q.state.data?.status === 'running' ? 1_000 : false),
    // A task that ended does not change: read once.
    staleTime: (q) => (q.state.data && q.state.data.status !== 'running' ? Infinity : 0),
  })
  watch(() => task.data.value?.status, (status, before) => {
    const f = current.value
    if (!status || !f || task.data.value?.id !== f.id) return
    f.status = status
    save()
    if (before === 'running' && status !== 'running') void queryClient.invalidateQueries({ queryKey: ['sources'] })
  })
  return { task: computed(() => (task.data.value?.id === current.value?.id ? task.data.value : undefined)), estimate: computed(() => current.value?.estimate ?? null) }
}

/** A source's latest tasks; a running one (say, after a reload) is followed. */
export function useLatestReprocess(source: () => string, enabled: () => boolean) {
  const list = useQuery({
    queryKey: computed(() => ['reprocess', source(), 'list']),
    queryFn: () => classifierApi.listReprocessTasks(source()),
    enabled: computed(enabled),
  })
  watch(() => list.data.value?.tasks[0], (latest) => {
    if (latest?.status === 'running' && followed.get(latest.source)?.id !== latest.id) followReprocess(latest, null)
  })
  return list
}
