package deadletter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
)

func TestParsePolicies(t *testing.T) {
	t.Parallel()
	ps, err := deadletter.ParsePolicies(" es_timeout=30s/30m/8 , RULE_PANIC=5m/1h/2,")
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.For(domain.ErrorCodeESTimeout); got != (domain.RetryPolicy{Initial: 30 * time.Second, Max: 30 * time.Minute, Retries: 8}) {
		t.Errorf("ES_TIMEOUT: %s", got)
	}
	if got := ps.For(domain.ErrorCodeRulePanic); got.Retries != 2 || got.Initial != 5*time.Minute {
		t.Errorf("RULE_PANIC: %s", got)
	}
	for _, bad := range []string{"ES_TIMEOUT", "NOPE=1m/1h/5", "ES_TIMEOUT=1m/1h", "ES_TIMEOUT=1m/30s/5", "ES_TIMEOUT=1m/25h/5",
		"ES_TIMEOUT=500ms/1h/5", "ES_TIMEOUT=1m/1h/-1", "ES_TIMEOUT=1m/1h/x", "DB_ERROR=1m/1h/5,DB_ERROR=2m/1h/5"} {
		if _, err := deadletter.ParsePolicies(bad); err == nil {
			t.Errorf("ParsePolicies(%q) accepted", bad)
		}
	}
}

// Without CLASSIFIER_DLQ_RETRY_POLICY every retryable code follows the
// original design's schedule; a validation error or a missing document
// gets no retries.
func TestDefaultPolicyIsTheSpecSchedule(t *testing.T) {
	t.Parallel()
	var ps deadletter.Policies
	for _, c := range deadletter.ErrorCodes() {
		want := domain.RetryPolicy{Initial: time.Minute, Max: time.Hour, Retries: 5}
		if c == domain.ErrorCodeValidation || c == domain.ErrorCodeNotFound || c == domain.ErrorCodeStalled {
			want.Retries = 0
		}
		if got := ps.For(c); got != want {
			t.Errorf("%s: %s, want %s", c, got, want)
		}
	}
}

// waits records the same failure again and again and returns, after each
// record, the wait until its next retry, in whole minutes or seconds.
func waits(t *testing.T, q *queue, code domain.ErrorCode, id string, times int, nominals ...time.Duration) []string {
	t.Helper()
	var out []string
	for range times {
		// A new message each time (words, not numbers, which the signature
		// ignores), so no streak makes the entry permanent early.
		word := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel")[len(out)]
		f := domain.DeadLetterEntry{ContentID: id, SourceName: "alpha", IndexName: "alpha_raw_content", ErrorCode: code, ErrorMessage: "attempt " + word + " failed"}
		if _, err := q.repo.EnqueueBatch(context.Background(), []domain.DeadLetterEntry{f}); err != nil {
			t.Fatal(err)
		}
		var wait float64
		var exhausted bool
		if err := q.db.QueryRow(`SELECT EXTRACT(EPOCH FROM next_retry_at - last_attempt_at), retry_count >= max_retries
			FROM dead_letter_queue WHERE content_id = $1`, id).Scan(&wait, &exhausted); err != nil {
			t.Fatal(err)
		}
		if exhausted {
			out = append(out, "exhausted")
			break
		}
		// The jitter is ±30%: a wait within it reads as the nominal one.
		nominal := time.Duration(wait * float64(time.Second))
		for _, d := range nominals {
			if nominal >= d*7/10 && nominal <= d*13/10 {
				nominal = d
				break
			}
		}
		out = append(out, nominal.String())
	}
	return out
}

// The retries of an entry follow its code's schedule: by default 1, 2, 4, 8
// and 16 minutes, then none; a configured code its own, capped at its Max.
func TestRecordFollowsTheSchedule(t *testing.T) {
	t.Parallel()
	q := setupQueue(t, deadletter.RepositoryConfig{Policies: deadletter.Policies{
		domain.ErrorCodeESTimeout: {Initial: 10 * time.Second, Max: 30 * time.Second, Retries: 4},
	}})
	got := strings.Join(waits(t, q, domain.ErrorCodeUnknown, "default", 7,
		time.Minute, 2*time.Minute, 4*time.Minute, 8*time.Minute, 16*time.Minute), " ")
	if want := "1m0s 2m0s 4m0s 8m0s 16m0s exhausted"; got != want {
		t.Errorf("default schedule: waits %s, want %s", got, want)
	}
	got = strings.Join(waits(t, q, domain.ErrorCodeESTimeout, "configured", 6, 10*time.Second, 20*time.Second, 30*time.Second), " ")
	if want := "10s 20s 30s 30s exhausted"; got != want {
		t.Errorf("ES_TIMEOUT=10s/30s/4: waits %s, want %s", got, want)
	}
}
