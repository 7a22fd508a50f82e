-- Drops the audit log of 014_audit_log.up.sql.
DROP TABLE IF EXISTS audit_log;
