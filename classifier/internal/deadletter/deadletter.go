// Package deadletter is the classifier's dead-letter queue, the whole
// feature in one place:
//
//   - Entry and Failure, what the queue holds and what is written to it;
//   - the retry schedule of each error code (Policies);
//   - Repository, the dead_letter_queue table: recording failures with
//     backoff, claiming due entries with a lease, resolving the entries of
//     documents since classified, and the operator's list, stats, requeue
//     and delete;
//   - RetryWorker, which claims due entries, re-reads their documents from
//     Elasticsearch and submits them to the normal worker pool and commit
//     path (the committer resolves an entry on success and records the
//     next failure otherwise);
//   - RegisterRoutes, the operator's HTTP routes under /api/v1/dlq, mounted
//     by package opsapi (whose tests serve them as main does and check every
//     answer against the OpenAPI document).
//
// The committer (package processor) writes failures with Repository.Record
// and resolves entries with Repository.Resolve.
package deadletter

import (
	"time"

	"github.com/north-cloud/classifier/internal/domain"
)

// Entry is a failed classification awaiting retry: one row of
// dead_letter_queue, as the operator's API lists it.
type Entry struct {
	ID            string           `json:"id"`
	ContentID     string           `json:"content_id"`
	SourceName    string           `json:"source_name"`
	IndexName     string           `json:"index_name"`
	ErrorMessage  string           `json:"error_message"`
	ErrorCode     domain.ErrorCode `json:"error_code"`
	RetryCount    int              `json:"retry_count"`
	MaxRetries    int              `json:"max_retries"`
	NextRetryAt   time.Time        `json:"next_retry_at"`
	CreatedAt     time.Time        `json:"created_at"`
	LastAttemptAt time.Time        `json:"last_attempt_at"`
	// Exhausted is derived: no retries left.
	Exhausted bool `json:"exhausted"`
	// FailureStreak counts the consecutive failures with the same error
	// code and Signature, the last one included.
	FailureStreak int `json:"failure_streak"`
	// Permanent is true when the streak reached the configured count: the
	// entry is exhausted early and PermanentReason says why. A re-queue
	// clears it.
	Permanent       bool       `json:"permanent"`
	PermanentReason *string    `json:"permanent_reason"`
	PermanentAt     *time.Time `json:"permanent_at"`
}

// Failure is one document that did not make it, on its way to the queue
// (Repository.Record).
type Failure struct {
	ContentID string
	Source    string
	// Index is the raw index the document lives in.
	Index   string
	Code    domain.ErrorCode
	Message string
}
