-- Back to the index-manager's own audit table of 001_audit_log: entries of
-- requests other than index operations (refusals for the role) are
-- dropped, as they have no index.
DELETE FROM audit_log WHERE outcome = 'denied' OR action NOT IN ('create', 'delete', 'refresh');
ALTER TABLE audit_log DROP CONSTRAINT audit_log_outcome;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_outcome CHECK (outcome IN ('pending', 'success', 'failure'));
ALTER TABLE audit_log
    DROP COLUMN role,
    DROP COLUMN method,
    DROP COLUMN route,
    DROP COLUMN summary,
    ALTER COLUMN action DROP DEFAULT,
    ALTER COLUMN target DROP DEFAULT;
ALTER SEQUENCE audit_log_id_seq RENAME TO index_audit_log_id_seq;
ALTER INDEX idx_audit_target RENAME TO idx_audit_index;
ALTER TABLE audit_log RENAME CONSTRAINT audit_log_outcome TO index_audit_log_outcome;
ALTER TABLE audit_log RENAME COLUMN target TO index_name;
ALTER TABLE audit_log RENAME TO index_audit_log;
