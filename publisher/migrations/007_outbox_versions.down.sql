-- Reverts 007_outbox_versions.up.sql. Only one row per (index, id) can stay
-- under the old key: the latest version of each document is kept.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier') THEN
        REVOKE INSERT (version, changed_fields, canonical_url, duplicate_of_index, duplicate_of_id, duplicate_kind)
            ON classified_outbox FROM classifier;
    END IF;
END
$$;
DELETE FROM classified_outbox o
 USING classified_outbox newer
 WHERE newer.index_name = o.index_name AND newer.content_id = o.content_id AND newer.version > o.version;
ALTER TABLE classified_outbox DROP CONSTRAINT IF EXISTS unique_outbox_index_content_version;
ALTER TABLE classified_outbox ADD CONSTRAINT unique_outbox_index_content UNIQUE (index_name, content_id);
ALTER TABLE classified_outbox DROP CONSTRAINT IF EXISTS outbox_version_positive;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS duplicate_kind;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS duplicate_of_id;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS duplicate_of_index;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS canonical_url;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS changed_fields;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS version;
