-- The Redis channel of each row, derived in the database exactly as
-- domain.OutboxEntry.RoutingKey derives it (a test keeps the two in step), so
-- that the API can filter entries by channel and count publishes per channel
-- with an index instead of re-deriving the route in every query. It is a
-- generated column: the classifier's INSERT does not (and cannot) set it.
ALTER TABLE classified_outbox ADD COLUMN IF NOT EXISTS channel TEXT GENERATED ALWAYS AS (
    CASE
        WHEN is_crime_related AND crime_subcategory IS NOT NULL THEN 'articles:crime:' || crime_subcategory
        WHEN is_crime_related THEN 'articles:crime'
        WHEN content_type = 'article' THEN 'articles:news'
        WHEN content_type = 'video' THEN 'content:video'
        WHEN content_type = 'image' THEN 'content:image'
        ELSE 'content:other'
    END
) STORED;

-- The claim's order (crime first, then oldest) as an index, so claiming a
-- batch reads the first rows of the index instead of sorting every pending row.
CREATE INDEX IF NOT EXISTS idx_outbox_claim ON classified_outbox(is_crime_related DESC, created_at ASC)
    WHERE status = 'pending';

-- GET /api/v1/channels: publishes per channel over the last hour and day.
CREATE INDEX IF NOT EXISTS idx_outbox_channel_published ON classified_outbox(channel, published_at)
    WHERE status = 'published';

-- GET /api/v1/outbox: newest first, keyset (cursor) pagination.
CREATE INDEX IF NOT EXISTS idx_outbox_list ON classified_outbox(created_at DESC, id DESC);
