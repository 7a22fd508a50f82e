DROP INDEX IF EXISTS idx_dlq_source_next_retry;
DROP TABLE IF EXISTS dlq_retry_budgets;
