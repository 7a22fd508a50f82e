-- A dead letter's attempts: each failure recorded on the entry (its first,
-- then each failed retry), with its time, error code and message, so an
-- operator sees its history, not only the last error.
--
-- A JSONB array on the entry, bounded to its last 20 attempts (the oldest
-- dropped), rather than a table of attempts: the attempt is appended in
-- the same upsert that records the failure (no extra statement on the
-- committer's path, nothing to keep in step), deleting or retrying the
-- entry successfully takes its history with it, and the bound keeps a row
-- of a document failing for weeks at about 20 KB (messages are cut to
-- 1000 characters). The list never reads it; GET /dlq/:id/attempts does.
ALTER TABLE dead_letter_queue ADD COLUMN IF NOT EXISTS attempts JSONB NOT NULL DEFAULT '[]'::jsonb;
-- An entry recorded before keeps its last failure as its one known attempt.
UPDATE dead_letter_queue SET attempts = jsonb_build_array(jsonb_build_object(
    'at', last_attempt_at, 'error_code', COALESCE(error_code, 'UNKNOWN'), 'error_message', LEFT(error_message, 1000),
    'retry', retry_count))
WHERE attempts = '[]'::jsonb;
