-- Reverts 023_published_versions_kept.up.sql: the rows whose outcome was
-- forgotten are deleted (as the old cleanup did), and every row holds an
-- outcome again.
DROP INDEX IF EXISTS idx_published_outcomes_remembered_at;
DELETE FROM published_outcomes WHERE outcome IS NULL;
ALTER TABLE published_outcomes ALTER COLUMN outcome SET NOT NULL;
CREATE INDEX IF NOT EXISTS idx_published_outcomes_at ON published_outcomes (published_at);
