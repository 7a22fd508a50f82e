-- Reverts 022_claim_index_uuid.up.sql: claims are compared by version alone
-- again, so a recreated index's documents wait for the old rows' sweep.
ALTER TABLE raw_claims DROP COLUMN IF EXISTS index_uuid;
