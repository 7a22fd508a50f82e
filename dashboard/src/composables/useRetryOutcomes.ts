// Follows the dead-letter entries re-queued from the view until their retry
// has run, so the operator learns the outcome (classified, or failed again
// and how) instead of a success toast that later turns into "exhausted".
import { computed, reactive, watch } from 'vue'
import { useQuery } from '@tanstack/vue-query'
import { toast } from 'vue-sonner'
import { classifierApi } from '@/api/client'
import { outcomeText, retryOutcome, type RetryOutcome } from '@/lib/deadLetters'
import type { DeadLetterEntry } from '@/types/classifier'

const POLL = 2_000

export function useRetryOutcomes(onSettled: () => void) {
  const pending = reactive(new Map<string, { entry: DeadLetterEntry }>())
  const outcomes = reactive(new Map<string, RetryOutcome>())
  const ids = computed(() => [...pending.keys()].sort())
  const poll = useQuery({
    queryKey: computed(() => ['dlq', 'retry-outcomes', ids.value]),
    enabled: computed(() => ids.value.length > 0),
    refetchInterval: POLL,
    queryFn: async () => Promise.all([...pending.values()].map(async ({ entry }) => {
      const { entries } = await classifierApi.listDeadLetters({ content_id: entry.content_id, index: entry.index_name, limit: 5 })
      return [entry.id, retryOutcome(entry, entries.find((e) => e.content_id === entry.content_id && e.index_name === entry.index_name))] as const
    })),
  })
  watch(() => poll.data.value, (results) => {
    for (const [id, o] of results ?? []) {
      const p = pending.get(id)
      if (!p) continue
      outcomes.set(id, o)
      if (o.state === 'waiting') continue
      pending.delete(id)
      const text = `${p.entry.content_id}: ${outcomeText(o)}`
      if (o.state === 'succeeded') toast.success(text)
      else toast.warning(text)
      onSettled()
    }
  })
  /** Starts following an entry re-queued now. */
  function follow(entry: DeadLetterEntry) {
    pending.set(entry.id, { entry })
    outcomes.set(entry.id, { state: 'waiting' })
  }
  return { follow, outcomes }
}
