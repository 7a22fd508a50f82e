package domain

import (
	"time"

	"github.com/north-cloud/infrastructure/backoff"
)

// ErrorCode categorizes DLQ errors for filtering, alerting and retry policy.
type ErrorCode string

// Error codes. The first five are the spec's; DB_ERROR, VALIDATION_ERROR and
// NOT_FOUND are ours (DESIGN.md section 5: per-error-type retry policies).
const (
	ErrorCodeESTimeout     ErrorCode = "ES_TIMEOUT"
	ErrorCodeESUnavailable ErrorCode = "ES_UNAVAILABLE"
	ErrorCodeRulePanic     ErrorCode = "RULE_PANIC"
	ErrorCodeQualityError  ErrorCode = "QUALITY_ERROR"
	ErrorCodeUnknown       ErrorCode = "UNKNOWN"
	ErrorCodeDB            ErrorCode = "DB_ERROR"
	ErrorCodeValidation    ErrorCode = "VALIDATION_ERROR"
	ErrorCodeNotFound      ErrorCode = "NOT_FOUND"
)

// DefaultMaxRetries is the number of retries of a retryable entry.
const DefaultMaxRetries = 5

// Retryable reports whether a retry can fix an error of this code. A
// validation error is the document's own fault: it goes to the DLQ with no
// retries, visible and re-queueable by an operator.
func (c ErrorCode) Retryable() bool {
	return c != ErrorCodeValidation && c != ErrorCodeNotFound
}

// RetryPolicy returns the backoff of an error code: outages of Elasticsearch
// or Postgres retry soon, a panic (a bug, probably repeatable) waits longer.
// Every policy has jitter, so documents that failed together do not retry
// together.
func (c ErrorCode) RetryPolicy() backoff.Policy {
	switch c {
	case ErrorCodeESTimeout, ErrorCodeESUnavailable, ErrorCodeDB:
		return backoff.Policy{Initial: 30 * time.Second, Max: 30 * time.Minute, Multiplier: 2, Jitter: 0.3}
	case ErrorCodeRulePanic, ErrorCodeQualityError:
		return backoff.Policy{Initial: 5 * time.Minute, Max: time.Hour, Multiplier: 2, Jitter: 0.3}
	default:
		return backoff.Policy{Initial: time.Minute, Max: time.Hour, Multiplier: 2, Jitter: 0.3}
	}
}

// DeadLetterEntry is a failed classification awaiting retry (spec 3.2).
type DeadLetterEntry struct {
	ID            string    `json:"id"`
	ContentID     string    `json:"content_id"`
	SourceName    string    `json:"source_name"`
	IndexName     string    `json:"index_name"`
	ErrorMessage  string    `json:"error_message"`
	ErrorCode     ErrorCode `json:"error_code"`
	RetryCount    int       `json:"retry_count"`
	MaxRetries    int       `json:"max_retries"`
	NextRetryAt   time.Time `json:"next_retry_at"`
	CreatedAt     time.Time `json:"created_at"`
	LastAttemptAt time.Time `json:"last_attempt_at"`
	// Exhausted is derived: no retries left.
	Exhausted bool `json:"exhausted"`
}

// DocKey is a document's identity: its raw index and _id. Ids are unique
// only inside one index, so every key on a content id carries the index.
type DocKey struct {
	Index string
	ID    string
}

// Failure is one document that did not make it, on its way to the DLQ.
type Failure struct {
	ContentID string
	Source    string
	// Index is the raw index the document lives in.
	Index   string
	Code    ErrorCode
	Message string
}
