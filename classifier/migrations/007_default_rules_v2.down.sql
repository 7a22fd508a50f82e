-- Reverts 007_default_rules_v2.up.sql: the 005 rules it upgraded and nobody
-- edited since get 005's content back; those edited since are handed back to
-- 005's seed as they are (005's down removes them, edited or not); the rules
-- it inserted are deleted; min_keywords and the seed record are dropped.
UPDATE classification_rules r
   SET keywords = o.keywords, min_confidence = o.min_confidence, priority = o.priority,
       min_keywords = 0, seed = o.seed
  FROM classification_rules_seed o
  JOIN classification_rules_seed n ON n.seed = '007_default_rules' AND n.name = o.name
 WHERE o.seed = '005_default_rules'
   AND r.name = o.name AND r.seed = n.seed AND r.topic = n.topic
   AND r.keywords = n.keywords AND r.min_confidence = n.min_confidence AND r.priority = n.priority
   AND r.min_keywords = n.min_keywords;

UPDATE classification_rules r
   SET seed = '005_default_rules'
  FROM classification_rules_seed o
 WHERE o.seed = '005_default_rules' AND r.name = o.name AND r.seed = '007_default_rules';

DELETE FROM classification_rules WHERE seed = '007_default_rules';

DROP TABLE IF EXISTS classification_rules_seed;
ALTER TABLE classification_rules DROP CONSTRAINT IF EXISTS classification_rules_min_keywords_check;
ALTER TABLE classification_rules DROP COLUMN IF EXISTS min_keywords;
