-- Every create, delete and refresh of an index: who, what, with which
-- parameters, and how it ended.
CREATE TABLE IF NOT EXISTS index_audit_log (
    id          BIGSERIAL PRIMARY KEY,
    actor       VARCHAR(255) NOT NULL,
    action      VARCHAR(50)  NOT NULL,
    index_name  VARCHAR(255) NOT NULL,
    parameters  JSONB        NOT NULL DEFAULT '{}'::jsonb,
    outcome     VARCHAR(20)  NOT NULL,
    status_code INTEGER      NOT NULL,
    error       TEXT,
    request_id  VARCHAR(128),
    created_at  TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW()
);

CREATE INDEX IF NOT EXISTS idx_audit_created_at ON index_audit_log (created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS idx_audit_index ON index_audit_log (index_name, created_at DESC);
CREATE INDEX IF NOT EXISTS idx_audit_actor ON index_audit_log (actor, created_at DESC);
