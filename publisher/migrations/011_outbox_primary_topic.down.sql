-- Drops the columns of 011_outbox_primary_topic.up.sql (and with them the
-- classifier's INSERT grant on them).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier') THEN
        REVOKE INSERT (primary_topic, primary_topic_confidence) ON classified_outbox FROM classifier;
    END IF;
END
$$;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS primary_topic_confidence;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS primary_topic;
