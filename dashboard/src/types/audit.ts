// The audit log every service keeps (infrastructure/audit, docs/roles.md):
// the same entry shape from the classifier, the publisher and the
// index-manager.

export type Role = 'viewer' | 'operator' | 'admin'
export type AuditOutcome = 'pending' | 'success' | 'failure' | 'denied'

export interface AuditEntry {
  id: number
  actor: string
  role: Role | ''
  method: string
  route: string
  /** A short name of the operation when the handler gives one (the index-manager: create, delete, refresh). */
  action: string
  /** The object acted on when the handler names it (the index-manager: the index). */
  target: string
  parameters: Record<string, unknown>
  summary?: string
  outcome: AuditOutcome
  status_code: number | null
  error?: string
  request_id?: string
  created_at: string
  finished_at: string | null
}

export interface AuditListResponse {
  entries: AuditEntry[]
  next_before_id?: number
}

export interface AuditFilter {
  actor?: string
  role?: Role | ''
  outcome?: AuditOutcome | ''
  action?: string
  /** The target filter: `target` on the classifier and the publisher, `index` on the index-manager. */
  target?: string
  index?: string
  /** RFC 3339. */
  since?: string
  limit?: number
  before_id?: number
}
