-- Without cancellation a cancelled task reads as failed, with its reason.
UPDATE reprocess_tasks SET status = 'failed' WHERE status = 'cancelled';
ALTER TABLE reprocess_tasks DROP CONSTRAINT IF EXISTS reprocess_tasks_status_check;
ALTER TABLE reprocess_tasks ADD CONSTRAINT reprocess_tasks_status_check
    CHECK (status IN ('running', 'completed', 'failed', 'abandoned'));
ALTER TABLE reprocess_tasks DROP COLUMN IF EXISTS cancel_requested_at;
ALTER TABLE reprocess_tasks DROP COLUMN IF EXISTS cancel_requested_by;
