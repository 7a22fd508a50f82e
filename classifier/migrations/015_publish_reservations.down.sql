DROP TABLE IF EXISTS publish_reservations;
