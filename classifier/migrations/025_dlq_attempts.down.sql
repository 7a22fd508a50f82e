-- Reverts 025_dlq_attempts.up.sql: an entry keeps only its last error again.
ALTER TABLE dead_letter_queue DROP COLUMN IF EXISTS attempts;
