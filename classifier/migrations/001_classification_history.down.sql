DROP TABLE IF EXISTS classification_history;
