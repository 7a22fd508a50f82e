import { createHttpClient, seg, type HttpClient, type HttpClientOptions } from './http'
import type {
  AckResponse, AuditFilter, AuditListResponse, CreateIndexRequest, DocumentHit, DocumentListParams,
  DocumentQueryRequest, DocumentQueryResponse, IndexDetail, IndexListResponse, IndexStats,
  LoginRequest, LoginResponse, MeResponse, AliasListResponse, AliasResponse, ContentCountParams, ContentCountResponse, ForceMergeResponse, TaskStatus,
} from '@/types/indexManager'

/** Path of the index-manager behind the dashboard's same-origin proxy. */
export const INDEX_MANAGER_BASE = '/api/index-manager/api/v1'

export function createIndexManagerApi(http: HttpClient) {
  return {
    login: (req: LoginRequest) => http.post<LoginResponse>('/auth/login', req),
    me: () => http.get<MeResponse>('/auth/me'),
    listIndices: (params?: { prefix?: string; index_type?: string }) => http.get<IndexListResponse>('/indices', params),
    getIndex: (name: string) => http.get<IndexDetail>(`/indices/${seg(name)}`),
    getMappings: (name: string) => http.get<Record<string, unknown>>(`/indices/${seg(name)}/mappings`),
    getStats: (name: string) => http.get<IndexStats>(`/indices/${seg(name)}/stats`),
    listDocuments: (name: string, params: DocumentListParams = {}) =>
      http.get<DocumentQueryResponse>(`/indices/${seg(name)}/documents`, { size: params.size, cursor: params.cursor }),
    queryDocuments: (index: string, query: DocumentQueryRequest) =>
      http.post<DocumentQueryResponse>(`/indices/${seg(index)}/_query`, query),
    getDocument: (index: string, id: string) => http.get<DocumentHit>(`/indices/${seg(index)}/documents/${seg(id)}`),
    createIndex: (request: CreateIndexRequest) => http.post<AckResponse>('/indices', request),
    /** confirm=true is required by the service from 1,000 documents on. */
    deleteIndex: (name: string, confirm = false) => http.delete<AckResponse>(`/indices/${seg(name)}`, { confirm }),
    refreshIndex: (name: string) => http.post<AckResponse>(`/indices/${seg(name)}/_refresh`),
    // Index maintenance (admin, audited): aliases and force merges.
    listAliases: () => http.get<AliasListResponse>('/aliases'),
    putAlias: (index: string, alias: string) => http.put<AliasResponse>(`/indices/${seg(index)}/aliases/${seg(alias)}`),
    deleteAlias: (index: string, alias: string) => http.delete<AliasResponse>(`/indices/${seg(index)}/aliases/${seg(alias)}`),
    /** Expunges deleted documents in the background; 409 while one runs on the index. */
    forceMerge: (index: string) => http.post<ForceMergeResponse>(`/indices/${seg(index)}/_forcemerge`, { only_expunge_deletes: true }),
    /** Documents of every content index of a type, in one request however many indices there are. */
    countContent: (params: ContentCountParams) => http.get<ContentCountResponse>('/content/_count', { ...params }),
    getTask: (task: string) => http.get<TaskStatus>(`/tasks/${seg(task)}`),
    listAudit: (filter: AuditFilter = {}) => http.get<AuditListResponse>('/audit', { ...filter }),
  }
}

export type IndexManagerApi = ReturnType<typeof createIndexManagerApi>

export function indexManagerClient(opts: Omit<HttpClientOptions, 'baseUrl'> & { baseUrl?: string }): IndexManagerApi {
  return createIndexManagerApi(createHttpClient({ baseUrl: INDEX_MANAGER_BASE, ...opts }))
}
