-- The version a document's next message takes, reserved before its outbox
-- row is written (package republish). The outbox lives in the publisher's
-- database, so the reservation and the row cannot share a transaction: a
-- retry that finds a reservation with the same outcome reuses its version
-- (its outbox insert is absorbed), and one with another outcome takes the
-- next version, so a row already in the outbox is never stood in for by a
-- different outcome. Record (published_outcomes) deletes the reservation.
CREATE TABLE IF NOT EXISTS publish_reservations (
    index_name  VARCHAR(255) NOT NULL,
    content_id  VARCHAR(512) NOT NULL,
    version     INTEGER      NOT NULL CHECK (version >= 1),
    outcome     JSONB        NOT NULL,
    reserved_at TIMESTAMPTZ  NOT NULL DEFAULT NOW(),
    PRIMARY KEY (index_name, content_id)
);
CREATE INDEX IF NOT EXISTS idx_publish_reservations_at ON publish_reservations (reserved_at);
