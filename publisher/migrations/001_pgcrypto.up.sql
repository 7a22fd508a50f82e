-- gen_random_uuid() is built into PostgreSQL 13+; pgcrypto keeps the outbox
-- schema working on older servers too. It is a trusted extension, so the
-- database owner may create it.
CREATE EXTENSION IF NOT EXISTS pgcrypto;
