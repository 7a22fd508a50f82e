-- Dead-letter queue (docs/architecture.md), with a claim lease:
-- the retry worker claims due rows by moving next_retry_at forward in the
-- same statement that selects them, so no lock has to outlive a statement.
CREATE TABLE IF NOT EXISTS dead_letter_queue (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    content_id VARCHAR(255) NOT NULL,
    source_name VARCHAR(255) NOT NULL,
    index_name VARCHAR(255) NOT NULL,
    error_message TEXT NOT NULL,
    error_code VARCHAR(50),
    retry_count INTEGER NOT NULL DEFAULT 0,
    max_retries INTEGER NOT NULL DEFAULT 5,
    next_retry_at TIMESTAMP WITH TIME ZONE NOT NULL,
    created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    last_attempt_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),

    -- Prevent duplicate entries for same content
    CONSTRAINT unique_content_in_dlq UNIQUE (content_id)
);

-- Index for retry worker: find retryable items efficiently
CREATE INDEX IF NOT EXISTS idx_dlq_next_retry ON dead_letter_queue(next_retry_at)
    WHERE retry_count < max_retries;

-- Index for monitoring by source
CREATE INDEX IF NOT EXISTS idx_dlq_source ON dead_letter_queue(source_name);

-- Index for finding exhausted items
CREATE INDEX IF NOT EXISTS idx_dlq_exhausted ON dead_letter_queue(retry_count, max_retries)
    WHERE retry_count >= max_retries;

-- Listing newest first with a stable cursor
CREATE INDEX IF NOT EXISTS idx_dlq_created ON dead_letter_queue(created_at DESC, id DESC);

COMMENT ON TABLE dead_letter_queue IS 'Failed classifications awaiting retry';
COMMENT ON COLUMN dead_letter_queue.error_code IS 'Categorized error: ES_TIMEOUT, ES_UNAVAILABLE, DB_ERROR, RULE_PANIC, QUALITY_ERROR, VALIDATION_ERROR, NOT_FOUND, UNKNOWN';
COMMENT ON COLUMN dead_letter_queue.max_retries IS '0 for documents no retry can fix (VALIDATION_ERROR): kept visible and re-queueable, never retried on their own';
