-- An operator can cancel a running reprocess task: the request is recorded
-- (cancel_requested_by/_at), the replica running the task sees it after its
-- current page and ends the task as cancelled. The documents already set back
-- to pending stay pending and are classified again.
ALTER TABLE reprocess_tasks ADD COLUMN IF NOT EXISTS cancel_requested_by VARCHAR(255);
ALTER TABLE reprocess_tasks ADD COLUMN IF NOT EXISTS cancel_requested_at TIMESTAMP WITH TIME ZONE;
ALTER TABLE reprocess_tasks DROP CONSTRAINT IF EXISTS reprocess_tasks_status_check;
ALTER TABLE reprocess_tasks ADD CONSTRAINT reprocess_tasks_status_check
    CHECK (status IN ('running', 'completed', 'failed', 'abandoned', 'cancelled'));
