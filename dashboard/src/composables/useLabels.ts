// The Labelling page's server state: one query key per classifier read,
// under ['labels'] so that a label given or deleted refreshes the queue,
// the list and the quality figures at once.
import { useQuery, useQueryClient } from '@tanstack/vue-query'
import { classifierApi } from '@/api/client'

export const LABELS_KEY = ['labels'] as const
export const CANDIDATES_LIMIT = 20
export const LABEL_LIST_LIMIT = 50

export const useLabelCandidates = () =>
  useQuery({ queryKey: [...LABELS_KEY, 'candidates'], queryFn: () => classifierApi.labelCandidates(CANDIDATES_LIMIT) })

export const useLabelList = () =>
  useQuery({ queryKey: [...LABELS_KEY, 'list'], queryFn: () => classifierApi.listLabels(LABEL_LIST_LIMIT) })

export const useLabelStats = () =>
  useQuery({ queryKey: [...LABELS_KEY, 'stats'], queryFn: () => classifierApi.labelStats() })

export const useModels = () => useQuery({ queryKey: ['models'], queryFn: () => classifierApi.listModels() })

/** Refetches every labels query (after a label is given or deleted). */
export function useInvalidateLabels() {
  const queryClient = useQueryClient()
  return () => queryClient.invalidateQueries({ queryKey: LABELS_KEY })
}
