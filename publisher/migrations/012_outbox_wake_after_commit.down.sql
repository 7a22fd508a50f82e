-- Back to migration 003's statement trigger: every INSERT statement into
-- classified_outbox sends one NOTIFY on "classified_outbox".
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
