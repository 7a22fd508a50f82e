ALTER TABLE classified_outbox DROP COLUMN IF EXISTS claim_token;
DROP INDEX IF EXISTS idx_outbox_content_id;
ALTER TABLE classified_outbox DROP CONSTRAINT IF EXISTS unique_outbox_index_content;
-- The old constraint allows one row per content id: keep the earliest row of
-- each content id (another index's later row with the same id is deleted).
DELETE FROM classified_outbox o
WHERE EXISTS (
    SELECT 1 FROM classified_outbox e
    WHERE e.content_id = o.content_id AND (e.created_at, e.id) < (o.created_at, o.id)
);
ALTER TABLE classified_outbox ADD CONSTRAINT unique_outbox_content UNIQUE (content_id);
