DROP TABLE IF EXISTS published_outcomes;
DROP TABLE IF EXISTS content_fingerprints;
DROP TABLE IF EXISTS canonical_urls;
