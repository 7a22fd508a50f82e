package deadletter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
)

// Each failure of a document is an attempt on its entry, oldest first,
// with its code, message and retry number; a failure of an exhausted
// entry is not one (nothing is retried any more). Messages are cut.
func TestAttemptsAreTheEntrysFailures(t *testing.T) {
	t.Parallel()
	q := setupQueue(t, deadletter.RepositoryConfig{})
	q.fail(t, "doc-1", domain.ErrorCodeESTimeout, "timeout after 30s")
	q.fail(t, "doc-1", domain.ErrorCodeRulePanic, "panic: "+strings.Repeat("x", 2000))
	q.fail(t, "doc-1", domain.ErrorCodeESUnavailable, "no node")
	e := q.entry(t, "doc-1")
	got, err := q.repo.Attempts(context.Background(), e.ID)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for i, a := range got {
		codes = append(codes, a.ErrorCode)
		if a.Retry != i || a.At.IsZero() || (i > 0 && a.At.Before(got[i-1].At)) {
			t.Errorf("attempt %d = %+v, want retry %d, timed, after the one before", i, a, i)
		}
	}
	if strings.Join(codes, ",") != "ES_TIMEOUT,RULE_PANIC,ES_UNAVAILABLE" {
		t.Fatalf("attempts = %+v, want the three failures oldest first", got)
	}
	if got[0].ErrorMessage != "timeout after 30s" || len([]rune(got[1].ErrorMessage)) != deadletter.AttemptMessageChars {
		t.Errorf("messages = %q, %d characters; want the first whole and the long one cut to %d", got[0].ErrorMessage,
			len([]rune(got[1].ErrorMessage)), deadletter.AttemptMessageChars)
	}
	if _, err := q.repo.Attempts(context.Background(), "00000000-0000-0000-0000-000000000000"); !errors.Is(err, deadletter.ErrNotFound) {
		t.Errorf("attempts of no entry: %v, want ErrNotFound", err)
	}
}

// An entry keeps its last AttemptsKept attempts: a document failing more
// often drops its oldest.
func TestAttemptsAreBounded(t *testing.T) {
	t.Parallel()
	policies, err := deadletter.ParsePolicies("ES_TIMEOUT=1s/1s/100")
	if err != nil {
		t.Fatal(err)
	}
	q := setupQueue(t, deadletter.RepositoryConfig{Policies: policies})
	const failures = deadletter.AttemptsKept + 5
	for i := range failures {
		q.fail(t, "doc-2", domain.ErrorCodeESTimeout, fmt.Sprintf("timeout on node n%c", 'a'+i))
	}
	got, err := q.repo.Attempts(context.Background(), q.entry(t, "doc-2").ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != deadletter.AttemptsKept || got[0].Retry != failures-deadletter.AttemptsKept || got[len(got)-1].Retry != failures-1 ||
		got[len(got)-1].ErrorMessage != fmt.Sprintf("timeout on node n%c", 'a'+failures-1) {
		t.Fatalf("%d attempts, first retry %d, last %+v; want the last %d, retries %d..%d", len(got), got[0].Retry, got[len(got)-1],
			deadletter.AttemptsKept, failures-deadletter.AttemptsKept, failures-1)
	}
}
