-- Removes exactly the rows 005_default_rules.up.sql inserted (edited or not);
-- rules created through the API are untouched.
DELETE FROM classification_rules WHERE seed = '005_default_rules';
