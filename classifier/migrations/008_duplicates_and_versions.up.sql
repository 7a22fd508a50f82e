-- Queue hygiene: duplicate articles and republish on change.

-- One row per canonical URL: the document that holds it. A second document
-- with the same canonical URL inside the window is its duplicate; once the
-- window has passed, the next document takes the URL over. url_hash is the
-- SHA-256 of canonical_url (a URL may be longer than a B-tree entry).
CREATE TABLE canonical_urls (
    url_hash      BYTEA        PRIMARY KEY,
    canonical_url TEXT         NOT NULL,
    index_name    VARCHAR(255) NOT NULL,
    content_id    VARCHAR(512) NOT NULL,
    source_name   VARCHAR(255) NOT NULL,
    first_seen_at TIMESTAMPTZ  NOT NULL DEFAULT NOW()
);
CREATE INDEX idx_canonical_urls_seen ON canonical_urls (first_seen_at);

-- The text fingerprints of every classified document inside the window:
-- the exact hash of its normalized title and body, its SimHash, and a
-- bottom-k sketch of its shingle hashes that finds near copies through the
-- GIN index (overlap, &&).
CREATE TABLE content_fingerprints (
    index_name    VARCHAR(255) NOT NULL,
    content_id    VARCHAR(512) NOT NULL,
    source_name   VARCHAR(255) NOT NULL,
    exact_hash    BYTEA        NOT NULL,
    simhash       BIGINT,
    sketch        BIGINT[]     NOT NULL DEFAULT '{}',
    first_seen_at TIMESTAMPTZ  NOT NULL DEFAULT NOW(),
    PRIMARY KEY (index_name, content_id)
);
CREATE INDEX idx_content_fingerprints_exact ON content_fingerprints (exact_hash);
CREATE INDEX idx_content_fingerprints_sketch ON content_fingerprints USING GIN (sketch);
CREATE INDEX idx_content_fingerprints_seen ON content_fingerprints (first_seen_at);

-- The last published outcome of every document: what subscribers were told
-- and under which version. A classification with the same outcome is not
-- published again; a different one is published with version + 1.
CREATE TABLE published_outcomes (
    index_name   VARCHAR(255) NOT NULL,
    content_id   VARCHAR(512) NOT NULL,
    version      INTEGER      NOT NULL CHECK (version >= 1),
    outcome      JSONB        NOT NULL,
    published_at TIMESTAMPTZ  NOT NULL DEFAULT NOW(),
    PRIMARY KEY (index_name, content_id)
);
CREATE INDEX idx_published_outcomes_at ON published_outcomes (published_at);
