-- Content identity and claim ownership (docs/architecture.md).
--
-- 1. A content id is unique only inside its index: a_classified_content/1 and
--    b_classified_content/1 are two documents, so they are two rows. The
--    classifier inserts with INSERT ... ON CONFLICT DO NOTHING (no conflict
--    target), which honours whichever unique constraint exists.
ALTER TABLE classified_outbox DROP CONSTRAINT IF EXISTS unique_outbox_content;
ALTER TABLE classified_outbox ADD CONSTRAINT unique_outbox_index_content UNIQUE (index_name, content_id);

-- Operators (runbook, psql) still look rows up by content id alone.
CREATE INDEX IF NOT EXISTS idx_outbox_content_id ON classified_outbox(content_id);

-- 2. Claim token: Claim sets one fresh token per batch; the batch's outcome
--    (published, failed, released) only touches rows that still carry it and
--    are still publishing. A batch that outlives PUBLISHER_OUTBOX_STALE_AFTER
--    is rescued (token cleared) and may be claimed again by another worker
--    (a new token): the old batch's late outcome then touches nothing instead
--    of overwriting the new claim. NULL whenever the row is not publishing.
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS claim_token UUID;

COMMENT ON COLUMN classified_outbox.claim_token IS 'Token of the claim batch holding the row while publishing; NULL otherwise';
