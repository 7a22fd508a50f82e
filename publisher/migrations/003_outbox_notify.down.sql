DROP TRIGGER IF EXISTS classified_outbox_notify ON classified_outbox;
DROP FUNCTION IF EXISTS classified_outbox_notify();
