-- An operator's marks on sources, and their reprocess requests. A source is
-- the prefix of its raw index ({source}_raw_content).

-- Low-priority sources: the poller gives their documents only the share of
-- capacity kept for the backlog. A source without a row is normal.
CREATE TABLE IF NOT EXISTS source_priorities (
    source_name VARCHAR(255) PRIMARY KEY,
    priority    VARCHAR(10)  NOT NULL CHECK (priority IN ('low', 'normal')),
    updated_by  VARCHAR(255) NOT NULL DEFAULT '',
    updated_at  TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW()
);

-- One row per reprocess request: its raw documents set back to pending
-- (with priority low), page by page, each only if unchanged since read. A
-- task is running on the replica that accepted it; one whose progress has
-- not moved for a while is taken for abandoned (its replica died), which
-- frees its index for a new request.
CREATE TABLE IF NOT EXISTS reprocess_tasks (
    id           UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    source_name  VARCHAR(255) NOT NULL,
    raw_index    VARCHAR(255) NOT NULL,
    scope        VARCHAR(20)  NOT NULL CHECK (scope IN ('classified', 'all')),
    max_docs     INTEGER CHECK (max_docs > 0),
    status       VARCHAR(20)  NOT NULL DEFAULT 'running'
                 CHECK (status IN ('running', 'completed', 'failed', 'abandoned')),
    scanned      BIGINT NOT NULL DEFAULT 0,
    requeued     BIGINT NOT NULL DEFAULT 0,
    conflicts    BIGINT NOT NULL DEFAULT 0,
    errors       BIGINT NOT NULL DEFAULT 0,
    error        TEXT,
    replica      VARCHAR(255) NOT NULL DEFAULT '',
    requested_by VARCHAR(255) NOT NULL DEFAULT '',
    started_at   TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    updated_at   TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    finished_at  TIMESTAMP WITH TIME ZONE
);
CREATE UNIQUE INDEX IF NOT EXISTS reprocess_tasks_one_running ON reprocess_tasks (raw_index) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS idx_reprocess_tasks_source ON reprocess_tasks (source_name, started_at DESC);
