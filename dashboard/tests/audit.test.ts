import { describe, expect, it } from 'vitest'
import { allows, mergeAudit } from '@/lib/audit'
import type { AuditEntry } from '@/types/audit'

const entry = (id: number, at: string, extra: Partial<AuditEntry> = {}): AuditEntry => ({
  id, actor: 'alice', role: 'operator', method: 'POST', route: '/api/v1/rules', action: '', target: '', parameters: {},
  outcome: 'success', status_code: 201, created_at: at, finished_at: at, ...extra,
})

describe('mergeAudit', () => {
  it('merges the three logs newest first, keyed per service, cut to the limit', () => {
    const merged = mergeAudit({
      classifier: [entry(2, '2026-11-26T10:00:03Z'), entry(1, '2026-11-26T10:00:00Z')],
      publisher: [entry(1, '2026-11-26T10:00:02Z')],
      'index-manager': [entry(1, '2026-11-26T10:00:01Z', { action: 'delete', target: 'x_raw_content' })],
    }, 3)
    expect(merged.map((e) => e.key)).toEqual(['classifier:2', 'publisher:1', 'index-manager:1'])
    expect(merged[2]).toMatchObject({ service: 'index-manager', action: 'delete', target: 'x_raw_content' })
  })
  it('keeps a stable order for entries of the same instant and tolerates a missing log', () => {
    const at = '2026-11-26T10:00:00Z'
    const merged = mergeAudit({ publisher: [entry(1, at)], classifier: [entry(2, at), entry(1, at)] }, 10)
    expect(merged.map((e) => e.key)).toEqual(['classifier:2', 'classifier:1', 'publisher:1'])
  })
})

describe('allows', () => {
  it('orders viewer < operator < admin and allows nothing without a known role', () => {
    expect(allows('admin', 'operator')).toBe(true)
    expect(allows('operator', 'operator')).toBe(true)
    expect(allows('operator', 'admin')).toBe(false)
    expect(allows('viewer', 'operator')).toBe(false)
    expect(allows('viewer', 'viewer')).toBe(true)
    expect(allows(null, 'viewer')).toBe(false)
    expect(allows('root' as never, 'viewer')).toBe(false)
  })
})
