-- Per-source retry budgets: the retry worker spends at most
-- CLASSIFIER_DLQ_SOURCE_RETRY_BUDGET retries per source per window of
-- CLASSIFIER_DLQ_SOURCE_RETRY_WINDOW, so one bad source cannot take the
-- retry capacity of the others. One row per source: the window it last
-- spent in (windows are aligned on the epoch, the same on every replica)
-- and how many retries it spent there. A row of an earlier window counts as
-- nothing spent.
CREATE TABLE IF NOT EXISTS dlq_retry_budgets (
    source_name  VARCHAR(255) PRIMARY KEY,
    window_start TIMESTAMP WITH TIME ZONE NOT NULL,
    spent        INTEGER NOT NULL DEFAULT 0 CHECK (spent >= 0)
);

-- The claim walks the sources with retryable entries and takes each one's
-- oldest due entries: both through this index.
CREATE INDEX IF NOT EXISTS idx_dlq_source_next_retry ON dead_letter_queue (source_name, next_retry_at)
    WHERE retry_count < max_retries;
