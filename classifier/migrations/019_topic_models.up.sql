-- Trained topic models (package topicmodel): versioned rows beside the
-- rules, hot-reloaded like them. A model is inactive when trained; an
-- operator makes it the candidate (scored in shadow beside the active model
-- on every document, and deciding the documents of its rollout share),
-- promotes it to active (the previous active model is retired, kept for a
-- rollback) or rolls the active one back (the last retired model, or the
-- shipped lexicon when there is none, decides again). With no active model
-- the shipped lexicon decides.
CREATE TABLE IF NOT EXISTS topic_models (
    id              BIGSERIAL PRIMARY KEY,
    name            VARCHAR(100) NOT NULL,
    status          VARCHAR(16)  NOT NULL DEFAULT 'inactive'
                    CHECK (status IN ('inactive', 'candidate', 'active', 'retired')),
    rollout_percent INTEGER      NOT NULL DEFAULT 0 CHECK (rollout_percent BETWEEN 0 AND 100),
    -- the topicmodel.Model, JSON, gzip-compressed
    model           BYTEA        NOT NULL,
    topics          TEXT[]       NOT NULL,
    terms           INTEGER      NOT NULL CHECK (terms >= 0),
    -- what it was trained on (documents per topic, the files, the settings)
    -- and how it scored on documents it did not learn from
    trained_on      JSONB        NOT NULL DEFAULT '{}'::jsonb,
    scores          JSONB        NOT NULL DEFAULT '{}'::jsonb,
    created_by      VARCHAR(255) NOT NULL DEFAULT '',
    created_at      TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    status_at       TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW()
);

-- At most one active model and one candidate.
CREATE UNIQUE INDEX IF NOT EXISTS topic_models_one_active ON topic_models ((status)) WHERE status = 'active';
CREATE UNIQUE INDEX IF NOT EXISTS topic_models_one_candidate ON topic_models ((status)) WHERE status = 'candidate';

-- A change of a model's status or rollout is a change of what decides
-- topics: it bumps the rule-set version and notifies, so every replica's
-- rule watcher reloads rules and models together (migration 002's function).
DROP TRIGGER IF EXISTS topic_models_changed_insert ON topic_models;
CREATE TRIGGER topic_models_changed_insert
    AFTER INSERT ON topic_models
    REFERENCING NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION classification_rules_changed();
DROP TRIGGER IF EXISTS topic_models_changed_update ON topic_models;
CREATE TRIGGER topic_models_changed_update
    AFTER UPDATE ON topic_models
    REFERENCING NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION classification_rules_changed();
DROP TRIGGER IF EXISTS topic_models_changed_delete ON topic_models;
CREATE TRIGGER topic_models_changed_delete
    AFTER DELETE ON topic_models
    REFERENCING OLD TABLE AS changed_old
    FOR EACH STATEMENT EXECUTE FUNCTION classification_rules_changed();
