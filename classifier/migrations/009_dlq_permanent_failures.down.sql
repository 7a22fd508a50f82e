DROP INDEX IF EXISTS idx_dlq_permanent;
ALTER TABLE dead_letter_queue
    DROP COLUMN IF EXISTS permanent_at,
    DROP COLUMN IF EXISTS permanent_reason,
    DROP COLUMN IF EXISTS failure_streak,
    DROP COLUMN IF EXISTS failure_signature;
