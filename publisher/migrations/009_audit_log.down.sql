-- Drops the audit log of 009_audit_log.up.sql.
DROP TABLE IF EXISTS audit_log;
