-- Permanent failures: a document that fails the same way on consecutive
-- attempts stops retrying early. Two failures are the same when their error
-- codes and their signatures (the message with ids, numbers and addresses
-- replaced by placeholders) are equal; failure_streak counts how many in a
-- row. When it reaches the configured count (CLASSIFIER_DLQ_PERMANENT_AFTER)
-- the entry's max_retries is lowered to its retry_count, so it is exhausted
-- like any other, and permanent_reason says why. A re-queue clears both and
-- restores the retries.
ALTER TABLE dead_letter_queue
    ADD COLUMN IF NOT EXISTS failure_signature TEXT,
    ADD COLUMN IF NOT EXISTS failure_streak    INTEGER NOT NULL DEFAULT 1,
    ADD COLUMN IF NOT EXISTS permanent_reason  TEXT,
    ADD COLUMN IF NOT EXISTS permanent_at      TIMESTAMP WITH TIME ZONE;

CREATE INDEX IF NOT EXISTS idx_dlq_permanent ON dead_letter_queue (permanent_at)
    WHERE permanent_at IS NOT NULL;

COMMENT ON COLUMN dead_letter_queue.failure_signature IS 'error_message with ids, numbers and addresses replaced by placeholders';
COMMENT ON COLUMN dead_letter_queue.failure_streak IS 'consecutive failures with the same error_code and failure_signature';
COMMENT ON COLUMN dead_letter_queue.permanent_reason IS 'set when the streak made the entry permanent: it is not retried until re-queued';
