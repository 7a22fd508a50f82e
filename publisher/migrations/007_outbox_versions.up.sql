-- Republish on change and duplicates (docs/architecture.md, "Queue hygiene").
--
-- 1. A document is published again when its classification changes: each
--    publication is a row with the next version. A message is identified by
--    (index, id, version); the unique key follows, so a retried insert of the
--    same version is absorbed and a new version is a new row.
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE classified_outbox ADD CONSTRAINT outbox_version_positive CHECK (version >= 1);
ALTER TABLE classified_outbox DROP CONSTRAINT IF EXISTS unique_outbox_index_content;
ALTER TABLE classified_outbox ADD CONSTRAINT unique_outbox_index_content_version UNIQUE (index_name, content_id, version);

-- The fields that differ from the previous version; NULL for version 1.
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS changed_fields TEXT[];

-- 2. The article's canonical URL (tracking parameters, AMP variants, scheme
--    and host case removed), and, for a copy of another document's text, the
--    original it copies (its raw index and id) and why ('content').
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS canonical_url TEXT;
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS duplicate_of_index VARCHAR(255);
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS duplicate_of_id VARCHAR(512);
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS duplicate_kind VARCHAR(16);

COMMENT ON COLUMN classified_outbox.version IS 'Publication of the document: 1, then +1 for each changed classification';
COMMENT ON COLUMN classified_outbox.changed_fields IS 'Message fields that differ from the previous version; NULL for version 1';
COMMENT ON COLUMN classified_outbox.canonical_url IS 'The URL reduced to its canonical form (an identity, not for fetching)';
COMMENT ON COLUMN classified_outbox.duplicate_of_index IS 'Raw index of the document this one copies, when it is a duplicate';
COMMENT ON COLUMN classified_outbox.duplicate_of_id IS 'Id of the document this one copies, when it is a duplicate';
COMMENT ON COLUMN classified_outbox.duplicate_kind IS 'Why it is a duplicate: content (same or nearly the same text)';

-- 3. The classifier's role may insert the new columns too (still only
--    pending rows: status and the queue columns keep their defaults).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier') THEN
        GRANT INSERT (version, changed_fields, canonical_url, duplicate_of_index, duplicate_of_id, duplicate_kind)
            ON classified_outbox TO classifier;
    END IF;
END
$$;
