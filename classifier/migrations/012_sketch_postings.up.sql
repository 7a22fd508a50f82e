-- Near-copy candidates in bounded time, whatever the corpus.
--
-- The GIN index on content_fingerprints.sketch found the documents sharing
-- a sketch value, but all of them: when many texts share boilerplate (wire
-- copy, a template, a flood of near-identical pages) one value is shared by
-- tens of thousands of rows, and each lookup read and sorted them all to
-- keep the earliest few. Here every sketch value is a posting in a B-tree
-- ordered as the candidates are wanted (first seen, then raw index and id
-- in the C collation, as Go compares them), so a lookup reads the first
-- few entries of each of a document's values and stops. The exact-hash
-- index gets the same order.

CREATE TABLE content_sketch_postings (
    value         BIGINT       NOT NULL,
    first_seen_at TIMESTAMPTZ  NOT NULL,
    index_name    VARCHAR(255) NOT NULL,
    content_id    VARCHAR(512) NOT NULL
);
CREATE UNIQUE INDEX idx_content_sketch_postings_order
    ON content_sketch_postings (value, first_seen_at, index_name COLLATE "C", content_id COLLATE "C");

-- The postings follow content_fingerprints in the same statement: a row's
-- postings are removed with its old version and added with its new one.
CREATE FUNCTION content_sketch_postings_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM content_sketch_postings p
         USING old_rows o CROSS JOIN LATERAL unnest(o.sketch) AS v(value)
         WHERE p.value = v.value AND p.first_seen_at = o.first_seen_at
           AND p.index_name = o.index_name AND p.content_id = o.content_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO content_sketch_postings (value, first_seen_at, index_name, content_id)
        SELECT DISTINCT v.value, n.first_seen_at, n.index_name, n.content_id
          FROM new_rows n CROSS JOIN LATERAL unnest(n.sketch) AS v(value)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER content_sketch_postings_insert AFTER INSERT ON content_fingerprints
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION content_sketch_postings_sync();
CREATE TRIGGER content_sketch_postings_update AFTER UPDATE ON content_fingerprints
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION content_sketch_postings_sync();
CREATE TRIGGER content_sketch_postings_delete AFTER DELETE ON content_fingerprints
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION content_sketch_postings_sync();

INSERT INTO content_sketch_postings (value, first_seen_at, index_name, content_id)
SELECT DISTINCT v.value, f.first_seen_at, f.index_name, f.content_id
  FROM content_fingerprints f CROSS JOIN LATERAL unnest(f.sketch) AS v(value);

DROP INDEX idx_content_fingerprints_sketch;
DROP INDEX idx_content_fingerprints_exact;
CREATE INDEX idx_content_fingerprints_exact
    ON content_fingerprints (exact_hash, first_seen_at, index_name COLLATE "C", content_id COLLATE "C");
