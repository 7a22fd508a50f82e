-- What a reprocess run changed: of the documents it set back to pending
-- (requeued), how many were classified again (reclassified) and how many of
-- those came out with another set of topics than their previous
-- classification (topics_changed). A requeued raw document carries the
-- task's id (reprocess_task); the committer counts it on the task in the
-- statement that inserts its classification_history row, so a retried
-- batch (whose history insert is absorbed) is not counted twice.
ALTER TABLE reprocess_tasks ADD COLUMN IF NOT EXISTS reclassified BIGINT NOT NULL DEFAULT 0;
ALTER TABLE reprocess_tasks ADD COLUMN IF NOT EXISTS topics_changed BIGINT NOT NULL DEFAULT 0;
