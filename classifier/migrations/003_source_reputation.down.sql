DROP TABLE IF EXISTS source_reputation;
