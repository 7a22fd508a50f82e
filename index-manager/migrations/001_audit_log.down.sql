DROP TABLE IF EXISTS index_audit_log;
