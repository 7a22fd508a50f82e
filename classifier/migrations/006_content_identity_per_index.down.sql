-- Back to one key per content id. Where two indices hold the same id, the
-- older dead-letter entry and history rows are kept so the old constraints
-- can be created again.
DELETE FROM dead_letter_queue WHERE length(content_id) > 255;
ALTER TABLE dead_letter_queue ALTER COLUMN content_id TYPE VARCHAR(255);
DELETE FROM dead_letter_queue d USING dead_letter_queue k
 WHERE d.content_id = k.content_id AND (d.created_at, d.id) > (k.created_at, k.id);
ALTER TABLE dead_letter_queue DROP CONSTRAINT IF EXISTS unique_content_in_dlq;
ALTER TABLE dead_letter_queue ADD CONSTRAINT unique_content_in_dlq UNIQUE (content_id);

DELETE FROM classification_history h USING classification_history k
 WHERE h.content_id = k.content_id AND h.claim_id = k.claim_id AND h.id > k.id;
ALTER TABLE classification_history DROP CONSTRAINT IF EXISTS unique_history_claim;
ALTER TABLE classification_history ADD CONSTRAINT unique_history_claim UNIQUE (content_id, claim_id);
