-- Periodic samples of each content index's cumulative Elasticsearch
-- counters; indexing and search rates are the differences between samples
-- over time. index_uuid tells a re-created index (counters restart at zero)
-- from the one before it.
CREATE TABLE IF NOT EXISTS index_stats_samples (
    index_name   VARCHAR(255) NOT NULL,
    index_uuid   VARCHAR(64)  NOT NULL,
    sampled_at   TIMESTAMP WITH TIME ZONE NOT NULL,
    index_total  BIGINT       NOT NULL,
    query_total  BIGINT       NOT NULL,
    PRIMARY KEY (index_name, sampled_at, index_uuid)
);

CREATE INDEX IF NOT EXISTS idx_stats_samples_sampled_at ON index_stats_samples (sampled_at);
