-- Tracing (docs/architecture.md, "Tracing"): the W3C traceparent of the
-- classifier's span that wrote the row, so the publisher's publish span
-- continues the document's trace and hands it on in the Redis message.
-- NULL when the classifier does not trace. 55 characters is the version-00
-- form: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>.
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS traceparent VARCHAR(55);

COMMENT ON COLUMN classified_outbox.traceparent IS 'W3C traceparent of the classifier span that wrote the row; NULL when not traced';

-- The classifier's role may insert it (still only pending rows).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier') THEN
        GRANT INSERT (traceparent) ON classified_outbox TO classifier;
    END IF;
END
$$;
