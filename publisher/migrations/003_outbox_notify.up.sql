-- Wake publishers as soon as rows are inserted (docs/architecture.md): every
-- INSERT statement into classified_outbox sends one NOTIFY on the channel
-- "classified_outbox". Publishers LISTEN on it and still poll
-- (PUBLISHER_OUTBOX_POLL_INTERVAL) in case a notification is missed.
--
-- The trigger is per statement, not per row: a batch insert of a hundred
-- documents wakes the publishers once, and the payload is empty because the
-- publisher claims from the table anyway. It also fires for an INSERT ... ON
-- CONFLICT DO NOTHING that inserted nothing; the publisher then finds nothing
-- to claim. The function runs as the inserting role (the classifier's
-- INSERT-only role); pg_notify needs no privilege beyond EXECUTE, which
-- PUBLIC has on functions.
CREATE OR REPLACE FUNCTION classified_outbox_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('classified_outbox', '');
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS classified_outbox_notify ON classified_outbox;
CREATE TRIGGER classified_outbox_notify
    AFTER INSERT ON classified_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION classified_outbox_notify();
