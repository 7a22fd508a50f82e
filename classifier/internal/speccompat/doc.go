// Package speccompat holds no code, only a test: code written against the
// classifier names of the original design (architecture.md 3.1 to 3.4:
// telemetry.NewProvider and its Record helpers, database.DeadLetterRepository
// and DLQStats, processor.DefaultBatchProcessorConfig, ProcessResult and
// ResultHandler, classifier.NewTrieRuleEngine and UpdateRules), written as
// the design writes it, with each package imported under the design's
// package name, compiled and run against the real packages (the repository
// against the real Postgres). docs/architecture.md maps each name to where
// it lives and says why it differs.
package speccompat
