DROP TABLE IF EXISTS classified_outbox;
