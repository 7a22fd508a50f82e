DROP INDEX IF EXISTS idx_outbox_list;
DROP INDEX IF EXISTS idx_outbox_channel_published;
DROP INDEX IF EXISTS idx_outbox_claim;
ALTER TABLE classified_outbox DROP COLUMN IF EXISTS channel;
