-- Every create, delete and refresh of an index: who, what, with which
-- parameters, and how it ended. A row is written as 'pending' before the
-- operation reaches Elasticsearch and finished afterwards, so no operation
-- runs unrecorded and a crash in between leaves a visible 'pending' row.
CREATE TABLE IF NOT EXISTS index_audit_log (
    id          BIGSERIAL PRIMARY KEY,
    actor       VARCHAR(255) NOT NULL,
    action      VARCHAR(50)  NOT NULL,
    index_name  VARCHAR(255) NOT NULL,
    parameters  JSONB        NOT NULL DEFAULT '{}'::jsonb,
    outcome     VARCHAR(20)  NOT NULL DEFAULT 'pending',
    status_code INTEGER,
    error       TEXT,
    request_id  VARCHAR(128),
    created_at  TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    finished_at TIMESTAMP WITH TIME ZONE,
    CONSTRAINT index_audit_log_outcome CHECK (outcome IN ('pending', 'success', 'failure'))
);

CREATE INDEX IF NOT EXISTS idx_audit_created_at ON index_audit_log (created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS idx_audit_index ON index_audit_log (index_name, id DESC);
CREATE INDEX IF NOT EXISTS idx_audit_actor ON index_audit_log (actor, id DESC);
