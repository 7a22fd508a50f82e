-- What a rule does to its topic once it passes its threshold (rules.Effect,
-- applied by the topic decision, docs/classification.md):
--
--   support   its keywords are evidence for its topic; with no model the
--             first passing rule decides. What every rule did before this
--             column, and its default, so existing rules are unchanged.
--   exclude   its topic is vetoed for the document: not kept, not primary,
--             no crime flag from it; its keywords are never evidence. The
--             topic crime vetoes every crime subcategory (the API accepts
--             that topic for exclude rules only).
--   override  its topic is kept and made the primary topic, at the rule's
--             score, whatever the model says; an exclude rule still wins.
--
-- The rule-set version triggers of 002 fire on every statement that changes
-- a row, whatever the column, and there is no history table of rule
-- content beside the audit log (which records the requests), so nothing
-- else needs the column. The default rule sets (005, 007) are all support:
-- classification_rules_seed, which records their content for upgrades, does
-- not need it either.
ALTER TABLE classification_rules ADD COLUMN IF NOT EXISTS effect TEXT NOT NULL DEFAULT 'support';
ALTER TABLE classification_rules DROP CONSTRAINT IF EXISTS classification_rules_effect_check;
ALTER TABLE classification_rules ADD CONSTRAINT classification_rules_effect_check
    CHECK (effect IN ('support', 'exclude', 'override'));
