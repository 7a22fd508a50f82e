import type { AuditEntry, Role } from '@/types/audit'

/** The services whose audit logs the dashboard merges. */
export type AuditService = 'classifier' | 'publisher' | 'index-manager'

export interface MergedAuditEntry extends AuditEntry {
  service: AuditService
  /** Unique across services (ids are per service). */
  key: string
}

/**
 * mergeAudit puts the entries of each service's log into one list, newest
 * first (ties broken by service and id, so the order is stable), at most
 * limit long: each service's page is its newest entries, so the merged
 * first `limit` are the newest of all.
 */
export function mergeAudit(pages: Partial<Record<AuditService, AuditEntry[]>>, limit: number): MergedAuditEntry[] {
  const all: MergedAuditEntry[] = []
  for (const [service, entries] of Object.entries(pages) as [AuditService, AuditEntry[] | undefined][]) {
    for (const e of entries ?? []) all.push({ ...e, service, key: `${service}:${e.id}` })
  }
  all.sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || a.service.localeCompare(b.service) || b.id - a.id)
  return all.slice(0, limit)
}

const rank: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 }

/** Whether a holder of role may do what needs the role need (docs/roles.md). */
export function allows(role: Role | null | undefined, need: Role): boolean {
  return role != null && role in rank && rank[role] >= rank[need]
}
