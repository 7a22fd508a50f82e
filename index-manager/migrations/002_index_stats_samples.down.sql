DROP TABLE IF EXISTS index_stats_samples;
