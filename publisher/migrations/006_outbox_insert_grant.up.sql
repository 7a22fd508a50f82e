-- The classifier's role may insert only new, pending rows: column-level
-- INSERT on exactly the columns the classifier writes
-- (classifier/internal/storage/outbox_writer.go), instead of INSERT on the
-- whole table. Every other column takes its default, so a row the
-- classifier inserts is always status 'pending', retry_count 0, with no
-- claim_token, next_retry_at, published_at or error_message: it cannot
-- insert a row already 'published' (never sent), 'publishing' under a
-- claim, or 'failed' with its retries spent. ON CONFLICT DO NOTHING needs
-- no more than this; ON CONFLICT DO UPDATE stays refused (no UPDATE).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier') THEN
        REVOKE INSERT ON classified_outbox FROM classifier;
        GRANT INSERT (content_id, source_name, index_name, content_type, topics,
                      quality_score, is_crime_related, crime_subcategory,
                      title, body, url, published_date)
            ON classified_outbox TO classifier;
    END IF;
END
$$;
