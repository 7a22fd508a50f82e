DROP TABLE IF EXISTS topic_labels;
