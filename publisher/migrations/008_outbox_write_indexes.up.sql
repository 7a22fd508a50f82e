-- Fewer index entries per outbox write. Every insert, claim and mark writes
-- a new row version with an entry in each index whose predicate it matches
-- (the status is in every partial index's predicate, so none of these
-- updates is HOT). Indexes no query reads only cost writes:
--
-- 1. idx_outbox_pending, idx_outbox_routing and idx_outbox_crime (pending
--    rows by age, by content type and source, crime by age): the claim reads
--    pending rows through idx_outbox_claim (crime first, then oldest), and so
--    does the oldest pending age of the backlog gauge; no query filters
--    pending rows by content type and source.
DROP INDEX IF EXISTS idx_outbox_pending;
DROP INDEX IF EXISTS idx_outbox_routing;
DROP INDEX IF EXISTS idx_outbox_crime;

-- 2. The unique key leads with content_id, so it also serves the lookups by
--    content id alone (operators, the API's content_id filter) and
--    idx_outbox_content_id goes: one index entry fewer per insert, claim and
--    mark. The classifier's ON CONFLICT DO NOTHING and an ON CONFLICT naming
--    (index_name, content_id, version) match it as before (the column order
--    does not matter to them). The new key is in place before the old one
--    goes, so uniqueness is never unguarded.
ALTER TABLE classified_outbox ADD CONSTRAINT unique_outbox_content_index_version UNIQUE (content_id, index_name, version);
ALTER TABLE classified_outbox DROP CONSTRAINT IF EXISTS unique_outbox_index_content_version;
DROP INDEX IF EXISTS idx_outbox_content_id;
