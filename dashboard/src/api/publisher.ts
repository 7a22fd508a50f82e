import { bulkBody, createHttpClient, seg, type HttpClient, type HttpClientOptions } from './http'
import type {
  ChannelsResponse, OutboxEntry, OutboxListParams, OutboxListResponse, OutboxRequeueRequest, OutboxStats,
  OutboxStatsFilter,
} from '@/types/publisher'
import type { RequeueResponse } from '@/types/classifier'
import type { AuditFilter, AuditListResponse } from '@/types/audit'

/** Root of the publisher behind the dashboard's same-origin proxy. */
export const PUBLISHER_ROOT = '/api/publisher'

export function createPublisherApi(http: HttpClient) {
  return {
    /** The service's audit log, newest first. */
    listAudit: (filter: AuditFilter = {}) => http.get<AuditListResponse>('/api/v1/audit', { ...filter }),
    /** Figures of the rows matching the filter (all rows without one). */
    outboxStats: (filter: OutboxStatsFilter = {}) => http.get<OutboxStats>('/api/v1/outbox/stats', { ...filter }),
    listOutbox: (params: OutboxListParams = {}) => http.get<OutboxListResponse>('/api/v1/outbox', { ...params }),
    /** Puts one failed row back to pending. */
    retryOutbox: (id: string) => http.post<OutboxEntry>(`/api/v1/outbox/${seg(id)}/retry`),
    /** Puts every failed row matching the filter back to pending; an empty filter means all (sent as `"all": true`). */
    retryOutboxMatching: (filter: OutboxRequeueRequest = {}) => http.post<RequeueResponse>('/api/v1/outbox/retry', bulkBody(filter)),
    channels: () => http.get<ChannelsResponse>('/api/v1/channels'),
    metrics: () => http.text('/metrics'),
  }
}

export type PublisherApi = ReturnType<typeof createPublisherApi>

export function publisherClient(opts: Omit<HttpClientOptions, 'baseUrl'> & { baseUrl?: string }): PublisherApi {
  return createPublisherApi(createHttpClient({ baseUrl: PUBLISHER_ROOT, ...opts }))
}
