-- The five priority levels of the queue hygiene rules (critical 100, high 80,
-- normal 50, low 20, cleanup 10) as source marks; before, only low and normal.
ALTER TABLE source_priorities DROP CONSTRAINT IF EXISTS source_priorities_priority_check;
ALTER TABLE source_priorities ADD CONSTRAINT source_priorities_priority_check
    CHECK (priority IN ('critical', 'high', 'normal', 'low', 'cleanup'));
