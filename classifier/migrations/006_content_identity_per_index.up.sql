-- Content identity is (raw index, _id): ids are unique only inside one
-- index, so a_raw_content/1 and b_raw_content/1 are two documents. Every key
-- on a content id also carries the index it came from.

-- Dead-letter queue: one entry per (index, document). index_name is the raw
-- index the document lives in.
ALTER TABLE dead_letter_queue DROP CONSTRAINT IF EXISTS unique_content_in_dlq;
ALTER TABLE dead_letter_queue ADD CONSTRAINT unique_content_in_dlq UNIQUE (index_name, content_id);

-- History: one row per claim of a document in an index. index_name there is
-- the classified index, one per raw index.
ALTER TABLE classification_history DROP CONSTRAINT IF EXISTS unique_history_claim;
ALTER TABLE classification_history ADD CONSTRAINT unique_history_claim UNIQUE (index_name, content_id, claim_id);

-- A failure must reach the queue even when what failed is the document's own
-- id: Elasticsearch ids are up to 512 bytes, so the column takes 512.
ALTER TABLE dead_letter_queue ALTER COLUMN content_id TYPE VARCHAR(512);
