// Package speccompat holds no code, only a test: code written against the
// publisher names of the original design (architecture.md 4.2 to 4.4:
// domain.OutboxCreateRequest, database.OutboxRepository and its
// OutboxStats, and the telemetry Provider's RecordOutboxPublish), written as
// the design writes it, with each package imported under the design's
// package name, compiled and run against the real packages and the real
// Postgres. docs/architecture.md maps each name to where it lives and says
// why it differs.
package speccompat
