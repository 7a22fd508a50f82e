-- The index-manager's audit log becomes the audit log every service keeps
-- (infrastructure/audit, table audit_log, the same shape as the
-- classifier's and the publisher's): the token's role, the method and
-- route of the request and a summary beside the action, its target (the
-- index) and outcome. Rows written before are kept, with the method and
-- route of their action and the role every token had then (admin).
ALTER TABLE index_audit_log RENAME TO audit_log;
ALTER TABLE audit_log RENAME COLUMN index_name TO target;
ALTER TABLE audit_log RENAME CONSTRAINT index_audit_log_outcome TO audit_log_outcome;
ALTER INDEX idx_audit_index RENAME TO idx_audit_target;
ALTER SEQUENCE index_audit_log_id_seq RENAME TO audit_log_id_seq;

ALTER TABLE audit_log
    ADD COLUMN role    VARCHAR(20)  NOT NULL DEFAULT '',
    ADD COLUMN method  VARCHAR(10)  NOT NULL DEFAULT '',
    ADD COLUMN route   VARCHAR(255) NOT NULL DEFAULT '',
    ADD COLUMN summary TEXT         NOT NULL DEFAULT '',
    ALTER COLUMN action SET DEFAULT '',
    ALTER COLUMN target SET DEFAULT '';

UPDATE audit_log SET role = 'admin',
    method = CASE action WHEN 'delete' THEN 'DELETE' ELSE 'POST' END,
    route = CASE action
        WHEN 'create' THEN '/api/v1/indices'
        WHEN 'delete' THEN '/api/v1/indices/:name'
        WHEN 'refresh' THEN '/api/v1/indices/:name/_refresh'
        ELSE '' END;

ALTER TABLE audit_log DROP CONSTRAINT audit_log_outcome;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_outcome CHECK (outcome IN ('pending', 'success', 'failure', 'denied'));
