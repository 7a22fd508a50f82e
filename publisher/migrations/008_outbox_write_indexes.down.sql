-- Reverts 008_outbox_write_indexes.up.sql: the indexes and the unique key of
-- 002, 005 and 007 as they were.
CREATE INDEX IF NOT EXISTS idx_outbox_content_id ON classified_outbox(content_id);
ALTER TABLE classified_outbox ADD CONSTRAINT unique_outbox_index_content_version UNIQUE (index_name, content_id, version);
ALTER TABLE classified_outbox DROP CONSTRAINT IF EXISTS unique_outbox_content_index_version;

CREATE INDEX IF NOT EXISTS idx_outbox_pending ON classified_outbox(created_at)
    WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS idx_outbox_routing ON classified_outbox(content_type, source_name)
    WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS idx_outbox_crime ON classified_outbox(created_at)
    WHERE status = 'pending' AND is_crime_related = TRUE;
