-- The writers wake the publishers after their inserts commit
-- (infrastructure/outbox.Wake), not from a trigger inside the inserting
-- transaction (migration 003).
--
-- A transaction that sends a NOTIFY takes one lock, shared by every database
-- of the server, at commit and keeps it until the commit is durable. With
-- the trigger every insert into the outbox notified, so the inserts'
-- commits waited for each other's WAL flushes one by one instead of
-- flushing together: at a thousand one-row inserts a second, one slow flush
-- held the inserts behind it for hundreds of milliseconds. A NOTIFY sent on
-- its own writes no WAL and holds the lock for microseconds.
--
-- A writer that inserts without waking (an operator's INSERT in psql, a
-- classifier older than this migration) is found at the publishers' next
-- fallback poll (PUBLISHER_OUTBOX_POLL_INTERVAL).
DROP TRIGGER IF EXISTS classified_outbox_notify ON classified_outbox;
DROP FUNCTION IF EXISTS classified_outbox_notify();
