-- Running per-source statistics. Workers update them with one atomic
-- INSERT ... ON CONFLICT DO UPDATE per batch, adding deltas, so concurrent
-- workers and replicas never lose each other's counts.
CREATE TABLE IF NOT EXISTS source_reputation (
    source_name          VARCHAR(255) PRIMARY KEY,
    total_documents      BIGINT NOT NULL DEFAULT 0,
    classified_documents BIGINT NOT NULL DEFAULT 0,
    failed_documents     BIGINT NOT NULL DEFAULT 0,
    crime_documents      BIGINT NOT NULL DEFAULT 0,
    quality_sum          BIGINT NOT NULL DEFAULT 0,
    first_seen_at        TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    last_seen_at         TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    -- Reputation in 0..1: mean quality (shrunk towards 50 for sources with
    -- few documents) weighted with the success rate.
    reputation_score     DOUBLE PRECISION GENERATED ALWAYS AS (
        0.7 * ((quality_sum + 50.0 * 20) / (classified_documents + 20)) / 100.0
      + 0.3 * ((classified_documents + 1.0) / (total_documents + 1.0))
    ) STORED
);
