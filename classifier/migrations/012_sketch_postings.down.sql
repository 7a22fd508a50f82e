DROP INDEX IF EXISTS idx_content_fingerprints_exact;
CREATE INDEX IF NOT EXISTS idx_content_fingerprints_exact ON content_fingerprints (exact_hash);
CREATE INDEX IF NOT EXISTS idx_content_fingerprints_sketch ON content_fingerprints USING GIN (sketch);

DROP TRIGGER IF EXISTS content_sketch_postings_delete ON content_fingerprints;
DROP TRIGGER IF EXISTS content_sketch_postings_update ON content_fingerprints;
DROP TRIGGER IF EXISTS content_sketch_postings_insert ON content_fingerprints;
DROP FUNCTION IF EXISTS content_sketch_postings_sync();
DROP TABLE IF EXISTS content_sketch_postings;
