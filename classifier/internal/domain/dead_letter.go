package domain

import (
	"fmt"
	"time"
)

// Defaults of a RetryPolicy: the original design's schedule, retries after
// 1, 2, 4, 8 and 16 minutes, no wait over an hour, 5 retries.
const (
	RetryInitialDefault = time.Minute
	RetryMaxDefault     = time.Hour
	MaxRetriesDefault   = 5
)

// RetryPolicy is the retry schedule of one error code: the first retry
// Initial after the failure, each later one twice the wait before it, never
// more than Max, and Retries retries in all. CLASSIFIER_DLQ_RETRY_POLICY
// overrides it per code (package deadletter).
type RetryPolicy struct {
	Initial time.Duration
	Max     time.Duration
	Retries int
}

// DefaultRetryPolicy is the schedule of code when nothing overrides it. A
// document that can never succeed as it is (VALIDATION_ERROR) or no longer
// exists (NOT_FOUND) gets no retries: it stays visible, and an operator can
// requeue it.
func DefaultRetryPolicy(code ErrorCode) RetryPolicy {
	p := RetryPolicy{Initial: RetryInitialDefault, Max: RetryMaxDefault, Retries: MaxRetriesDefault}
	if code == ErrorCodeValidation || code == ErrorCodeNotFound || code == ErrorCodeStalled {
		p.Retries = 0
	}
	return p
}

// Delay is the wait before the retry that follows retries earlier ones:
// Initial doubled per retry, at most Max.
func (p RetryPolicy) Delay(retries int) time.Duration {
	d := p.Initial
	for i := 0; i < retries && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

func (p RetryPolicy) String() string {
	return fmt.Sprintf("%s/%s/%d", p.Initial, p.Max, p.Retries)
}

// DeadLetterEntry is a failed classification awaiting retry: one row of
// dead_letter_queue (migration 004 and later), as the repository returns it
// and the operator's API lists it, and what is enqueued
// (deadletter.Repository.Enqueue).
type DeadLetterEntry struct {
	ID           string    `json:"id"`
	ContentID    string    `json:"content_id"`
	SourceName   string    `json:"source_name"`
	IndexName    string    `json:"index_name"`
	ErrorMessage string    `json:"error_message"`
	ErrorCode    ErrorCode `json:"error_code"`
	RetryCount   int       `json:"retry_count"`
	MaxRetries   int       `json:"max_retries"`
	NextRetryAt  time.Time `json:"next_retry_at"`
	CreatedAt    time.Time `json:"created_at"`
	// LastAttemptAt is when the document last failed, or when a retry
	// worker last claimed the entry.
	LastAttemptAt time.Time `json:"last_attempt_at"`
	// Exhausted is derived: no retries left.
	Exhausted bool `json:"exhausted"`
	// FailureStreak counts the consecutive failures with the same error
	// code and signature, the last one included.
	FailureStreak int `json:"failure_streak"`
	// Permanent is true when the streak reached the configured count: the
	// entry is exhausted early and PermanentReason says why. A re-queue
	// clears it.
	Permanent       bool       `json:"permanent"`
	PermanentReason *string    `json:"permanent_reason"`
	PermanentAt     *time.Time `json:"permanent_at"`
	// ProcessingStrategy, IsProcessable and FailureReason are what the door
	// decided (package admission), read back from a VALIDATION_ERROR
	// entry's code and message: "refuse", false, and the reason (a URL
	// class's, or the refused field's). Empty on the other entries.
	ProcessingStrategy string `json:"processing_strategy,omitempty"`
	IsProcessable      *bool  `json:"is_processable,omitempty"`
	FailureReason      string `json:"failure_reason,omitempty"`
	// Retryable is false when the entry's error code is permanent
	// (ErrorCode.Permanent): an operator's retry of it is refused, and
	// RetryRefusal says why.
	Retryable    bool    `json:"retryable"`
	RetryRefusal *string `json:"retry_refusal"`
	// Policy is the entry's retry schedule: its error code's
	// (DefaultRetryPolicy, or the repository's override).
	Policy RetryPolicy `json:"-"`
}

// NewDeadLetterEntry returns the entry of a first failure at now: no retry
// used, the schedule of errorCode's default policy, the first retry due
// after its first delay.
func NewDeadLetterEntry(contentID, sourceName, indexName, errorMsg string, errorCode ErrorCode) *DeadLetterEntry {
	now := time.Now()
	p := DefaultRetryPolicy(errorCode)
	return &DeadLetterEntry{
		ContentID:     contentID,
		SourceName:    sourceName,
		IndexName:     indexName,
		ErrorMessage:  errorMsg,
		ErrorCode:     errorCode,
		MaxRetries:    p.Retries,
		NextRetryAt:   now.Add(p.Delay(0)),
		CreatedAt:     now,
		LastAttemptAt: now,
		Exhausted:     p.Retries == 0,
		Policy:        p,
	}
}

// NextRetryDelay is the wait before the next retry: the policy's first
// delay doubled per retry used (1, 2, 4, 8, 16 minutes by default), capped
// at its Max (an hour). The repository stores the same schedule, with
// jitter on the first delay.
func (d *DeadLetterEntry) NextRetryDelay() time.Duration {
	p := d.Policy
	if p.Initial <= 0 {
		p = DefaultRetryPolicy(d.ErrorCode)
	}
	return p.Delay(d.RetryCount)
}

// ShouldRetry reports whether retries remain.
func (d *DeadLetterEntry) ShouldRetry() bool {
	return d.RetryCount < d.MaxRetries && !d.Permanent
}

// IncrementRetry records one more failed attempt with newError: one more
// retry used, and the next one due after NextRetryDelay.
func (d *DeadLetterEntry) IncrementRetry(newError string) {
	now := time.Now()
	d.RetryCount++
	d.LastAttemptAt = now
	d.ErrorMessage = newError
	d.NextRetryAt = now.Add(d.NextRetryDelay())
	d.Exhausted = d.RetryCount >= d.MaxRetries
}

// Key is the document the entry is about.
func (d *DeadLetterEntry) Key() DocKey { return DocKey{Index: d.IndexName, ID: d.ContentID} }

// String is a one-line description for logs and debugging.
func (d *DeadLetterEntry) String() string {
	return fmt.Sprintf("DLQ[%s] content=%s index=%s source=%s code=%s retries=%d/%d next=%s",
		d.ID, d.ContentID, d.IndexName, d.SourceName, d.ErrorCode, d.RetryCount, d.MaxRetries, d.NextRetryAt.Format(time.RFC3339))
}
