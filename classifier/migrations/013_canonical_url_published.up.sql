-- A canonical URL belongs to a document that was published. A claim made
-- while the document is decided and written is provisional (published =
-- false): it holds the URL against other replicas for a short lease only,
-- and a document at that URL meanwhile is published flagged rather than
-- held back. The claim is confirmed once its document's outbox row is
-- written. Rows claimed before this migration were their holders already.
ALTER TABLE canonical_urls ADD COLUMN IF NOT EXISTS published BOOLEAN NOT NULL DEFAULT TRUE;
