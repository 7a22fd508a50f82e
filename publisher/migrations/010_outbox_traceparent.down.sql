-- Drops the traceparent column of 010_outbox_traceparent.up.sql (and with it
-- the classifier's INSERT grant on the column).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier') THEN
        REVOKE INSERT (traceparent) ON classified_outbox FROM classifier;
    END IF;
END
$$;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS traceparent;
