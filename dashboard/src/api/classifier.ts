import { bulkBody, createHttpClient, seg, type HttpClient, type HttpClientOptions } from './http'
import type {
  ClassificationStats, ClassifyResponse, DeadLetterFilter, DeadLetterListParams, DeadLetterListResponse,
  BulkRequeueResponse, DeadLetterAttempts, DeadLetterStats, RequeueResponse, Rule, RuleFilter, RuleInput, RuleListResponse, RuleTestRequest,
  RuleTestResponse, SourceListResponse, SourceReputation, SourceStatsResponse, PollStatusResponse,
  ReprocessRequest, ReprocessTask, ReprocessTaskList, SourcePriority, SourcePriorityLevel,
  LabelCandidatesResponse, LabelInput, LabelListResponse, LabelStats, TopicLabel, TopicModelListResponse, TopicModelSummary,
} from '@/types/classifier'
import type { AuditFilter, AuditListResponse } from '@/types/audit'

/** Root of the classifier behind the dashboard's same-origin proxy. */
export const CLASSIFIER_ROOT = '/api/classifier'

export function createClassifierApi(http: HttpClient) {
  return {
    /** The service's audit log, newest first. */
    listAudit: (filter: AuditFilter = {}) => http.get<AuditListResponse>('/api/v1/audit', { ...filter }),
    listRules: (filter: RuleFilter = {}) => http.get<RuleListResponse>('/api/v1/rules', { ...filter }),
    getRule: (id: number) => http.get<Rule>(`/api/v1/rules/${seg(id)}`),
    createRule: (input: RuleInput) => http.post<Rule>('/api/v1/rules', input),
    updateRule: (id: number, input: RuleInput) => http.put<Rule>(`/api/v1/rules/${seg(id)}`, input),
    deleteRule: (id: number) => http.delete<void>(`/api/v1/rules/${seg(id)}`),
    setRuleEnabled: (id: number, enabled: boolean) =>
      http.post<Rule>(`/api/v1/rules/${seg(id)}/${enabled ? 'enable' : 'disable'}`),
    testRules: (req: RuleTestRequest) => http.post<RuleTestResponse>('/api/v1/rules/test', req),
    classify: (doc: Record<string, unknown>) => http.post<ClassifyResponse>('/api/v1/classify', doc),

    listDeadLetters: (params: DeadLetterListParams = {}) => http.get<DeadLetterListResponse>('/api/v1/dlq', { ...params }),
    deadLetterStats: () => http.get<DeadLetterStats>('/api/v1/dlq/stats'),
    requeueDeadLetter: (id: string) => http.post<RequeueResponse>(`/api/v1/dlq/${seg(id)}/requeue`),
    /** An entry's attempts (each failure: when, code, message), oldest first. */
    deadLetterAttempts: (id: string) => http.get<DeadLetterAttempts>(`/api/v1/dlq/${seg(id)}/attempts`),
    /** Re-queues every entry matching filter; an empty filter re-queues all (sent as `"all": true`). */
    /** Re-queues every entry matching the filter, skipping (and counting) those whose error code is permanent. */
    requeueDeadLetters: (filter: DeadLetterFilter = {}) => http.post<BulkRequeueResponse>('/api/v1/dlq/requeue', bulkBody(filter)),
    /** Deletes every entry matching filter; an empty filter deletes all (sent as `"all": true`). */
    deleteDeadLetters: (filter: DeadLetterFilter = {}) => http.post<{ deleted: number }>('/api/v1/dlq/delete', bulkBody(filter)),
    deleteDeadLetter: (id: string) => http.delete<void>(`/api/v1/dlq/${seg(id)}`),

    listSources: () => http.get<SourceListResponse>('/api/v1/sources'),
    getSource: (name: string) => http.get<SourceReputation>(`/api/v1/sources/${seg(name)}`),
    /** The poll state of every raw index: which ones are skipped, and why. */
    pollStatus: () => http.get<PollStatusResponse>('/api/v1/sources/poll-status'),
    /** Per source: processed, refused at the door, duplicates, published, dead letters, oldest pending. */
    sourceStats: () => http.get<SourceStatsResponse>('/api/v1/sources/stats'),
    /** A source's priority mark; a source never marked is normal. */
    getSourcePriority: (source: string) => http.get<SourcePriority>(`/api/v1/sources/${seg(source)}/priority`),
    setSourcePriority: (source: string, priority: SourcePriorityLevel) =>
      http.put<SourcePriority>(`/api/v1/sources/${seg(source)}/priority`, { priority }),
    /** Starts a reprocess (202 with the running task); 409 while one of the source runs, 429 when the replica is busy. */
    reprocessSource: (source: string, req: ReprocessRequest = {}) =>
      http.post<ReprocessTask>(`/api/v1/sources/${seg(source)}/reprocess`, req),
    /** The source's reprocess tasks, newest first, a page at a time (cursor: the previous page's next_cursor). */
    listReprocessTasks: (source: string, page: { limit?: number; cursor?: string } = {}) =>
      http.get<ReprocessTaskList>(`/api/v1/sources/${seg(source)}/reprocess`, { ...page }),
    getReprocessTask: (source: string, id: string) => http.get<ReprocessTask>(`/api/v1/sources/${seg(source)}/reprocess/${seg(id)}`),
    /** Asks to cancel a running task (202; it ends as cancelled after its current page); 409 once it has ended. */
    cancelReprocessTask: (source: string, id: string) =>
      http.post<ReprocessTask>(`/api/v1/sources/${seg(source)}/reprocess/${seg(id)}/cancel`, {}),
    /** Documents worth a label (no topic, low confidence, disputed), already labelled ones left out; limit 1..100. */
    labelCandidates: (limit = 20) => http.get<LabelCandidatesResponse>('/api/v1/labels/candidates', { limit }),
    /** Labels a document (201; 200 when it relabels); 400 for a bad label, 404 when the document is not found. */
    putLabel: (input: LabelInput) => http.post<TopicLabel>('/api/v1/labels', input),
    /** The latest labels, with the total and the count per label. */
    listLabels: (limit = 50) => http.get<LabelListResponse>('/api/v1/labels', { limit }),
    deleteLabel: (id: number) => http.delete<void>(`/api/v1/labels/${seg(id)}`),
    /** Every label as labelled NDJSON ({"id","label","title","text"} a line), what `classifier train` reads. */
    exportLabels: () => http.text('/api/v1/labels/export'),
    /** The classifier's decisions at labelling time against the labels: per topic, confusion, per week. */
    labelStats: () => http.get<LabelStats>('/api/v1/labels/stats'),
    /** Trains a model on the stored labels, stored inactive (201); 400 when there are too few labels. */
    trainFromLabels: (name: string) => http.post<TopicModelSummary>('/api/v1/models/train', undefined, { name, from: 'labels' }),
    listModels: () => http.get<TopicModelListResponse>('/api/v1/models'),
    stats: (window = '1h', interval = '1m') => http.get<ClassificationStats>('/api/v1/stats', { window, interval }),
    /** Prometheus text of the classifier's /metrics. */
    metrics: () => http.text('/metrics'),
  }
}

export type ClassifierApi = ReturnType<typeof createClassifierApi>

export function classifierClient(opts: Omit<HttpClientOptions, 'baseUrl'> & { baseUrl?: string }): ClassifierApi {
  return createClassifierApi(createHttpClient({ baseUrl: CLASSIFIER_ROOT, ...opts }))
}
