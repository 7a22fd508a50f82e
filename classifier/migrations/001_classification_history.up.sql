-- One row per classification of a document. A retried write of the same
-- claim is absorbed by the unique key; a new claim (after a crash or a lease
-- expiry) records a new attempt.
CREATE TABLE IF NOT EXISTS classification_history (
    id                 BIGSERIAL PRIMARY KEY,
    content_id         VARCHAR(255) NOT NULL,
    claim_id           VARCHAR(512) NOT NULL,
    source_name        VARCHAR(255) NOT NULL,
    index_name         VARCHAR(255) NOT NULL,
    content_type       VARCHAR(50)  NOT NULL,
    quality_score      INTEGER      NOT NULL,
    topics             TEXT[]       NOT NULL DEFAULT '{}',
    is_crime_related   BOOLEAN      NOT NULL DEFAULT FALSE,
    crime_subcategory  VARCHAR(50),
    confidence         DOUBLE PRECISION NOT NULL DEFAULT 0,
    classifier_version VARCHAR(50)  NOT NULL,
    classified_at      TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    CONSTRAINT unique_history_claim UNIQUE (content_id, claim_id)
);

CREATE INDEX IF NOT EXISTS idx_history_classified_at ON classification_history (classified_at);
CREATE INDEX IF NOT EXISTS idx_history_source ON classification_history (source_name, classified_at);
