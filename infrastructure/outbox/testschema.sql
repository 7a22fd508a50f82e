-- The outbox table as the publisher's migrations leave it, for tests that
-- need the table in a scratch database without running those migrations
-- (the classifier's tests). The publisher's migrations own the real table;
-- a publisher test compares the two, column by column, and fails when they
-- disagree. Indexes that only speed up the publisher's queries, comments and
-- grants are left out. Same lines as publisher/migrations/002 and 004:
-- kept apart because the classifier's module may not import the publisher's,
-- and released migrations are never edited to share them.
CREATE TABLE classified_outbox (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    content_id VARCHAR(255) NOT NULL,
    source_name VARCHAR(255) NOT NULL,
    index_name VARCHAR(255) NOT NULL,
    content_type VARCHAR(50) NOT NULL,
    topics TEXT[] NOT NULL DEFAULT '{}',
    quality_score INTEGER NOT NULL,
    is_crime_related BOOLEAN NOT NULL DEFAULT FALSE,
    crime_subcategory VARCHAR(50),
    title TEXT NOT NULL,
    body TEXT,
    url TEXT NOT NULL,
    published_date TIMESTAMP WITH TIME ZONE,
    status VARCHAR(20) NOT NULL DEFAULT 'pending',
    retry_count INTEGER NOT NULL DEFAULT 0,
    max_retries INTEGER NOT NULL DEFAULT 5,
    error_message TEXT,
    created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    published_at TIMESTAMP WITH TIME ZONE,
    next_retry_at TIMESTAMP WITH TIME ZONE,
    channel TEXT GENERATED ALWAYS AS (
        CASE
            WHEN is_crime_related AND crime_subcategory IS NOT NULL THEN 'articles:crime:' || crime_subcategory
            WHEN is_crime_related THEN 'articles:crime'
            WHEN content_type = 'article' THEN 'articles:news'
            WHEN content_type = 'video' THEN 'content:video'
            WHEN content_type = 'image' THEN 'content:image'
            ELSE 'content:other'
        END
    ) STORED,
    claim_token UUID,
    version INTEGER NOT NULL DEFAULT 1,
    changed_fields TEXT[],
    canonical_url TEXT,
    duplicate_of_index VARCHAR(255),
    duplicate_of_id VARCHAR(512),
    duplicate_kind VARCHAR(16),
    traceparent VARCHAR(55),
    primary_topic VARCHAR(64),
    primary_topic_confidence REAL
        CHECK (primary_topic_confidence IS NULL OR (primary_topic_confidence >= 0 AND primary_topic_confidence <= 1)),
    CONSTRAINT outbox_status_valid CHECK (status IN ('pending', 'publishing', 'published', 'failed')),
    CONSTRAINT outbox_version_positive CHECK (version >= 1),
    CONSTRAINT unique_outbox_content_index_version UNIQUE (content_id, index_name, version)
);
