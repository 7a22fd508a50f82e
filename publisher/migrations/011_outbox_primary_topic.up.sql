-- The topic decision's primary section and its probability (beside the
-- spec's topics): primary_topic is the first of topics, confidence 0..1.
-- NULL when the document got no topic.
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS primary_topic VARCHAR(64);
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS primary_topic_confidence REAL
    CHECK (primary_topic_confidence IS NULL OR (primary_topic_confidence >= 0 AND primary_topic_confidence <= 1));

COMMENT ON COLUMN classified_outbox.primary_topic IS 'The primary section the classifier decided (the first of topics); NULL when no topic';
COMMENT ON COLUMN classified_outbox.primary_topic_confidence IS 'The primary topic''s probability, 0..1; NULL when no topic';

-- The classifier's role may insert them (still only pending rows).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier') THEN
        GRANT INSERT (primary_topic, primary_topic_confidence) ON classified_outbox TO classifier;
    END IF;
END
$$;
