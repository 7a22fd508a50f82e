-- Back to migration 002's table-level INSERT for the classifier's role.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier') THEN
        REVOKE INSERT (content_id, source_name, index_name, content_type, topics,
                       quality_score, is_crime_related, crime_subcategory,
                       title, body, url, published_date)
            ON classified_outbox FROM classifier;
        GRANT INSERT ON classified_outbox TO classifier;
    END IF;
END
$$;
