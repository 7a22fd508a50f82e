DROP TABLE IF EXISTS classification_rules;
DROP TABLE IF EXISTS classification_rules_state;
DROP FUNCTION IF EXISTS classification_rules_changed();
DROP FUNCTION IF EXISTS classification_rules_touch();
