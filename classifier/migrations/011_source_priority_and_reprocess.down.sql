DROP TABLE IF EXISTS reprocess_tasks;
DROP TABLE IF EXISTS source_priorities;
