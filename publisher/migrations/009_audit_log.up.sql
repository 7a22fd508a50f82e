-- The audit log (infrastructure/audit), the same table in every service:
-- every request to a mutating route with who made it (the token's subject
-- and role), what it asked (method, route, path parameters, a summary),
-- how it ended and when. Outbox retries are recorded here.
CREATE TABLE IF NOT EXISTS audit_log (
    id          BIGSERIAL PRIMARY KEY,
    actor       VARCHAR(255) NOT NULL,
    role        VARCHAR(20)  NOT NULL DEFAULT '',
    method      VARCHAR(10)  NOT NULL DEFAULT '',
    route       VARCHAR(255) NOT NULL DEFAULT '',
    action      VARCHAR(50)  NOT NULL DEFAULT '',
    target      VARCHAR(255) NOT NULL DEFAULT '',
    parameters  JSONB        NOT NULL DEFAULT '{}'::jsonb,
    summary     TEXT         NOT NULL DEFAULT '',
    outcome     VARCHAR(20)  NOT NULL DEFAULT 'pending',
    status_code INTEGER,
    error       TEXT,
    request_id  VARCHAR(128),
    created_at  TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    finished_at TIMESTAMP WITH TIME ZONE,
    CONSTRAINT audit_log_outcome CHECK (outcome IN ('pending', 'success', 'failure', 'denied'))
);

CREATE INDEX IF NOT EXISTS idx_audit_created_at ON audit_log (created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS idx_audit_target ON audit_log (target, id DESC);
CREATE INDEX IF NOT EXISTS idx_audit_actor ON audit_log (actor, id DESC);
