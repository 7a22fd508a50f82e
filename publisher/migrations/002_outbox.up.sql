-- Transactional outbox for guaranteed delivery (docs/architecture.md).
CREATE TABLE IF NOT EXISTS classified_outbox (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),

    -- Content identification
    content_id VARCHAR(255) NOT NULL,
    source_name VARCHAR(255) NOT NULL,
    index_name VARCHAR(255) NOT NULL,

    -- Routing information
    content_type VARCHAR(50) NOT NULL,
    topics TEXT[] NOT NULL DEFAULT '{}',
    quality_score INTEGER NOT NULL,
    is_crime_related BOOLEAN NOT NULL DEFAULT FALSE,
    crime_subcategory VARCHAR(50),

    -- Denormalized content for publishing (avoids an Elasticsearch round trip)
    title TEXT NOT NULL,
    body TEXT,
    url TEXT NOT NULL,
    published_date TIMESTAMP WITH TIME ZONE,

    -- Outbox metadata
    status VARCHAR(20) NOT NULL DEFAULT 'pending',
    retry_count INTEGER NOT NULL DEFAULT 0,
    max_retries INTEGER NOT NULL DEFAULT 5,
    error_message TEXT,

    -- Timestamps
    created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    published_at TIMESTAMP WITH TIME ZONE,
    next_retry_at TIMESTAMP WITH TIME ZONE,

    -- Idempotency: one outbox row per document
    CONSTRAINT unique_outbox_content UNIQUE (content_id),
    CONSTRAINT outbox_status_valid CHECK (status IN ('pending', 'publishing', 'published', 'failed'))
);

CREATE INDEX IF NOT EXISTS idx_outbox_pending ON classified_outbox(created_at)
    WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS idx_outbox_retry ON classified_outbox(next_retry_at)
    WHERE status = 'failed' AND retry_count < max_retries;
CREATE INDEX IF NOT EXISTS idx_outbox_routing ON classified_outbox(content_type, source_name)
    WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS idx_outbox_crime ON classified_outbox(created_at)
    WHERE status = 'pending' AND is_crime_related = TRUE;
CREATE INDEX IF NOT EXISTS idx_outbox_cleanup ON classified_outbox(published_at)
    WHERE status = 'published';
CREATE INDEX IF NOT EXISTS idx_outbox_publishing ON classified_outbox(updated_at)
    WHERE status = 'publishing';

COMMENT ON TABLE classified_outbox IS 'Transactional outbox for guaranteed Redis publishing';
COMMENT ON COLUMN classified_outbox.status IS 'pending=awaiting publish, publishing=in-flight, published=done, failed=retry needed';

-- The classifier writes here through its own role, which may INSERT and do
-- nothing else (docs/architecture.md). The role is created by the deployment
-- (scripts/services.sh, docker-compose); where it does not exist there is
-- nothing to grant.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier') THEN
        GRANT INSERT ON classified_outbox TO classifier;
    END IF;
END
$$;
