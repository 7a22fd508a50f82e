package domain

import "github.com/north-cloud/classifier/internal/rules"

// ClassificationRule is the original design's name for a keyword rule (the
// parameter of NewTrieRuleEngine and UpdateRules, architecture.md 3.4). The
// rule is rules.Rule: it lives beside the engine that gives its fields their
// meaning (thresholds, effects) and that the rule store loads it into; this
// alias lets code that names it domain.ClassificationRule compile.
type ClassificationRule = rules.Rule
