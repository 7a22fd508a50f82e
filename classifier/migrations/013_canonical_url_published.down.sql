ALTER TABLE canonical_urls DROP COLUMN IF EXISTS published;
