-- A document's published version outlives its published outcome.
--
-- Cleanup used to delete a document's published_outcomes row after the
-- retention (7 days by default), while the publisher may still hold the
-- outbox row of that version (its own retention, and failed rows stay). A
-- later classification with a new outcome then started again at version 1:
-- its outbox insert was absorbed by the old row (ON CONFLICT DO NOTHING),
-- recorded as published, and subscribers never heard of the change.
--
-- Now the cleanup only forgets the outcome (outcome NULL) and keeps the row's
-- version: a document classified again after that is published as news,
-- with the version after the last one, which no outbox row can hold. A stale
-- reservation is folded into the same row before it is deleted. A row is
-- about 100 bytes per document ever published.
ALTER TABLE published_outcomes ALTER COLUMN outcome DROP NOT NULL;
-- The cleanup looks for old outcomes that are still remembered; the
-- forgotten rows stay out of its index.
DROP INDEX IF EXISTS idx_published_outcomes_at;
CREATE INDEX idx_published_outcomes_remembered_at ON published_outcomes (published_at) WHERE outcome IS NOT NULL;
