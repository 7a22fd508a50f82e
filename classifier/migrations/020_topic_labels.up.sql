-- Operators' topic labels (package labels): one label per document
-- (raw index, id), with the text it was given for and what the classifier
-- had decided then, so the labels can train the next model (classifier
-- train -labels, POST /api/v1/models/train?from=labels) and measure the
-- decisions (precision and recall per topic, over time).
CREATE TABLE IF NOT EXISTS topic_labels (
    id                   BIGSERIAL PRIMARY KEY,
    raw_index            VARCHAR(255) NOT NULL,
    content_id           VARCHAR(512) NOT NULL,
    label                VARCHAR(64)  NOT NULL CHECK (label ~ '^[a-z][a-z0-9_]{0,63}$'),
    title                TEXT         NOT NULL,
    body                 TEXT         NOT NULL,
    predicted_topic      VARCHAR(64)  NOT NULL DEFAULT '',
    predicted_confidence REAL         NOT NULL DEFAULT 0,
    labelled_by          VARCHAR(255) NOT NULL DEFAULT '',
    labelled_at          TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    CONSTRAINT topic_labels_document UNIQUE (raw_index, content_id)
);

CREATE INDEX IF NOT EXISTS topic_labels_labelled_at ON topic_labels (labelled_at);
