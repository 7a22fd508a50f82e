-- Topic rules of the rule engine (classifier/internal/rules), edited through the API
-- (/api/v1/rules) and hot-reloaded by every classifier replica.
--
-- Hot reload: every statement that changes classification_rules (from the
-- API or from psql) bumps the single version row of
-- classification_rules_state in the same transaction and sends
-- NOTIFY classification_rules '<version>'. Replicas LISTEN on that channel and
-- also poll the version row once a second as a fallback, so a missed
-- notification (a reconnect) delays a reload by at most the poll interval.
-- The version is transactional (unlike a sequence): a replica that sees the
-- new version also sees the rows that produced it.

CREATE TABLE IF NOT EXISTS classification_rules (
    id             BIGSERIAL PRIMARY KEY,
    name           VARCHAR(100)     NOT NULL,
    topic          VARCHAR(64)      NOT NULL,
    keywords       TEXT[]           NOT NULL DEFAULT '{}',
    min_confidence DOUBLE PRECISION NOT NULL DEFAULT 0.3,
    priority       INTEGER          NOT NULL DEFAULT 0,
    enabled        BOOLEAN          NOT NULL DEFAULT TRUE,
    -- seed names the migration that inserted the row (NULL for rules
    -- created through the API), so that migration's down removes exactly
    -- the rows it added.
    seed           VARCHAR(64),
    created_at     TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    updated_at     TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    CONSTRAINT classification_rules_name_key UNIQUE (name),
    CONSTRAINT classification_rules_min_confidence_check CHECK (min_confidence >= 0 AND min_confidence <= 1),
    CONSTRAINT classification_rules_topic_check CHECK (topic ~ '^[a-z][a-z0-9_]*$'),
    CONSTRAINT classification_rules_name_check CHECK (btrim(name) <> '')
);

CREATE INDEX IF NOT EXISTS idx_classification_rules_topic ON classification_rules (topic);
CREATE INDEX IF NOT EXISTS idx_classification_rules_enabled ON classification_rules (enabled) WHERE enabled;

-- Exactly one row: the version of the rule set.
CREATE TABLE IF NOT EXISTS classification_rules_state (
    id         BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    version    BIGINT  NOT NULL DEFAULT 1,
    changed_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW()
);
INSERT INTO classification_rules_state (id) VALUES (TRUE) ON CONFLICT DO NOTHING;

-- updated_at follows every update, including edits made in psql.
CREATE OR REPLACE FUNCTION classification_rules_touch() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := NOW();
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS classification_rules_touch ON classification_rules;
CREATE TRIGGER classification_rules_touch
    BEFORE UPDATE ON classification_rules
    FOR EACH ROW EXECUTE FUNCTION classification_rules_touch();

-- One version bump and one NOTIFY per statement that changed at least one
-- row (a batch insert of the default rules reloads once; an UPDATE or DELETE
-- that matched nothing reloads nothing). Transition tables need one trigger
-- per event, hence one trigger per event over one function.
CREATE OR REPLACE FUNCTION classification_rules_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v BIGINT;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        NULL; -- always a change worth a reload
    ELSIF TG_OP = 'DELETE' THEN
        IF NOT EXISTS (SELECT 1 FROM changed_old) THEN
            RETURN NULL;
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM changed_new) THEN
        RETURN NULL;
    END IF;
    UPDATE classification_rules_state
       SET version = version + 1, changed_at = NOW()
     WHERE id
    RETURNING version INTO v;
    PERFORM pg_notify('classification_rules', v::text);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS classification_rules_changed_insert ON classification_rules;
CREATE TRIGGER classification_rules_changed_insert
    AFTER INSERT ON classification_rules
    REFERENCING NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION classification_rules_changed();

DROP TRIGGER IF EXISTS classification_rules_changed_update ON classification_rules;
CREATE TRIGGER classification_rules_changed_update
    AFTER UPDATE ON classification_rules
    REFERENCING NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION classification_rules_changed();

DROP TRIGGER IF EXISTS classification_rules_changed_delete ON classification_rules;
CREATE TRIGGER classification_rules_changed_delete
    AFTER DELETE ON classification_rules
    REFERENCING OLD TABLE AS changed_old
    FOR EACH STATEMENT EXECUTE FUNCTION classification_rules_changed();

DROP TRIGGER IF EXISTS classification_rules_changed_truncate ON classification_rules;
CREATE TRIGGER classification_rules_changed_truncate
    AFTER TRUNCATE ON classification_rules
    FOR EACH STATEMENT EXECUTE FUNCTION classification_rules_changed();
