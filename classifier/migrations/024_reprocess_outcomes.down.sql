-- Reverts 024_reprocess_outcomes.up.sql: the tasks no longer count what
-- their requeued documents became.
ALTER TABLE reprocess_tasks DROP COLUMN IF EXISTS topics_changed;
ALTER TABLE reprocess_tasks DROP COLUMN IF EXISTS reclassified;
