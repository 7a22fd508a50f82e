-- Login sessions: each login starts one, and its refresh token (kept only
-- as a SHA-256 hash) gets new short access tokens until the session ends
-- (expires_at, from the login), is revoked, or its refresh token is used
-- twice. previous_hash is the refresh token the last refresh replaced: one
-- presented again was copied, and the session is revoked.
CREATE TABLE IF NOT EXISTS sessions (
    id             UUID PRIMARY KEY,
    username       VARCHAR(255) NOT NULL,
    role           VARCHAR(16)  NOT NULL,
    refresh_hash   BYTEA        NOT NULL UNIQUE,
    previous_hash  BYTEA        UNIQUE,
    client_ip      VARCHAR(64)  NOT NULL DEFAULT '',
    created_at     TIMESTAMP WITH TIME ZONE NOT NULL,
    refreshed_at   TIMESTAMP WITH TIME ZONE NOT NULL,
    expires_at     TIMESTAMP WITH TIME ZONE NOT NULL,
    revoked_at     TIMESTAMP WITH TIME ZONE,
    revoked_reason VARCHAR(255)
);

CREATE INDEX IF NOT EXISTS idx_sessions_username ON sessions (username) WHERE revoked_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_sessions_expires_at ON sessions (expires_at);
