-- Reverts 021_rule_effect.up.sql: every rule supports its topic again. An
-- exclude rule would then support the topic it vetoed (a sports-context
-- rule on crime would flag sports reports), so exclude rules are disabled
-- first; they stay in the table for an operator to read, and up again does
-- not enable them. Override rules become support rules of their topic.
UPDATE classification_rules SET enabled = FALSE WHERE effect = 'exclude' AND enabled;
ALTER TABLE classification_rules DROP CONSTRAINT IF EXISTS classification_rules_effect_check;
ALTER TABLE classification_rules DROP COLUMN IF EXISTS effect;
