package domain

import "github.com/north-cloud/infrastructure/outbox"

// OutboxCreateRequest is the original design's name (architecture.md 4.2)
// for the fields of a new outbox row: outbox.Message, the one contract of
// the row that the classifier writes and the publisher reads
// (infrastructure/outbox). Every field of the design's request is there
// under its name and type; beside them are the message's Version (a zero
// Version is 1), ChangedFields, CanonicalURL, DuplicateOf, Traceparent and
// primary topic.
type OutboxCreateRequest = outbox.Message
