package testenv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/testenv"
)

// A test's context is bounded by the test binary's -timeout, not by a
// window of its own, and ends with the test.
func TestContextEndsWithTheRunNotAWindow(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) {
		ctx = testenv.Context(t)
		got, ok := ctx.Deadline()
		want, bounded := t.Deadline()
		if ok != bounded {
			t.Fatalf("context deadline set = %t, test deadline set = %t", ok, bounded)
		}
		if bounded && (!got.Before(want) || want.Sub(got) > time.Minute) {
			t.Errorf("context deadline %s, test deadline %s: want a little before it", got, want)
		}
		if ctx.Err() != nil {
			t.Fatalf("context ended during the test: %v", ctx.Err())
		}
	})
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("context after the test = %v, want canceled", ctx.Err())
	}
}

// WaitFor returns once the condition holds, even after its patience has
// passed several times over: patience only paces the log.
func TestWaitForOutlastsItsPatience(t *testing.T) {
	polls := 0
	testenv.WaitFor(t, time.Millisecond, time.Millisecond, "the fifth poll", func() bool {
		polls++
		return polls == 5
	})
	if polls != 5 {
		t.Errorf("polls = %d, want 5", polls)
	}
}
