DROP TABLE IF EXISTS topic_models;
