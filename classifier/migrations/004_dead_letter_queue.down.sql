DROP TABLE IF EXISTS dead_letter_queue;
