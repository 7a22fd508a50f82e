package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
)

// The entry helpers follow the design's schedule: retries after 1, 2, 4, 8
// and 16 minutes, capped at an hour, 5 retries; a document that can never
// succeed gets none.
func TestDeadLetterEntrySchedule(t *testing.T) {
	t.Parallel()
	e := domain.NewDeadLetterEntry("doc-1", "alpha", "alpha_raw_content", "timeout", domain.ErrorCodeESTimeout)
	if e.RetryCount != 0 || e.MaxRetries != 5 || !e.ShouldRetry() {
		t.Fatalf("new entry = %+v, want 0/5 retries and retryable", e)
	}
	if d := e.NextRetryAt.Sub(e.CreatedAt); d != time.Minute {
		t.Errorf("first retry after %s, want 1m", d)
	}
	want := []time.Duration{2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute}
	for i, w := range want {
		before := time.Now()
		e.IncrementRetry("attempt failed")
		if got := e.NextRetryDelay(); got != w {
			t.Errorf("after %d retries NextRetryDelay = %s, want %s", i+1, got, w)
		}
		if e.NextRetryAt.Before(before.Add(w)) || e.RetryCount != i+1 || e.ErrorMessage != "attempt failed" {
			t.Errorf("after %d retries entry = %+v", i+1, e)
		}
	}
	if e.ShouldRetry() || !e.Exhausted {
		t.Errorf("after 5 retries ShouldRetry = true, want false (%+v)", e)
	}
	e.RetryCount = 10
	if got := e.NextRetryDelay(); got != time.Hour {
		t.Errorf("NextRetryDelay after 10 retries = %s, want the 1h cap", got)
	}
	if s := e.String(); !strings.Contains(s, "content=doc-1") || !strings.Contains(s, "retries=10/5") {
		t.Errorf("String() = %q", s)
	}
	if v := domain.NewDeadLetterEntry("x", "alpha", "alpha_raw_content", "bad url", domain.ErrorCodeValidation); v.ShouldRetry() {
		t.Errorf("a validation error is retried: %+v", v)
	}
	// An entry carrying an override follows it.
	o := domain.DeadLetterEntry{ErrorCode: domain.ErrorCodeESTimeout, RetryCount: 2,
		Policy: domain.RetryPolicy{Initial: 30 * time.Second, Max: time.Minute, Retries: 8}}
	if got := o.NextRetryDelay(); got != time.Minute {
		t.Errorf("override NextRetryDelay = %s, want 1m (30s doubled twice, capped)", got)
	}
}

// A failure that cannot be undone by classifying the same document again is
// permanent, with the reason; an outage or a fault of ours is not.
func TestPermanentErrorCodes(t *testing.T) {
	t.Parallel()
	for _, c := range []domain.ErrorCode{domain.ErrorCodeValidation, domain.ErrorCodeNotFound} {
		if !c.Permanent() || !strings.Contains(c.NotRetryableReason(), string(c)+" is permanent") {
			t.Errorf("%s: permanent %t, reason %q; want permanent with its reason", c, c.Permanent(), c.NotRetryableReason())
		}
	}
	for _, c := range []domain.ErrorCode{domain.ErrorCodeESTimeout, domain.ErrorCodeESUnavailable, domain.ErrorCodeRulePanic,
		domain.ErrorCodeQualityError, domain.ErrorCodeUnknown, domain.ErrorCodeDB, domain.ErrorCodeStalled} {
		if c.Permanent() || c.NotRetryableReason() != "" {
			t.Errorf("%s is permanent; want retryable", c)
		}
	}
}
