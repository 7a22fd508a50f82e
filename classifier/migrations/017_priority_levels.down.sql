-- Back to two levels: a mark above normal becomes normal, cleanup becomes low.
UPDATE source_priorities SET priority = 'normal' WHERE priority IN ('critical', 'high');
UPDATE source_priorities SET priority = 'low' WHERE priority = 'cleanup';
ALTER TABLE source_priorities DROP CONSTRAINT IF EXISTS source_priorities_priority_check;
ALTER TABLE source_priorities ADD CONSTRAINT source_priorities_priority_check
    CHECK (priority IN ('low', 'normal'));
