package testenv

import (
	"context"
	"testing"
	"time"
)

// grace is how long before the test binary's -timeout a wait gives up, so
// the test fails with its own message (what it waited for) instead of the
// binary's panic and a dump of every goroutine.
const grace = 30 * time.Second

// Context returns a context for a test's calls to the real services. It
// ends when the test ends, or grace before the test binary's -timeout: the
// bound is the run's own, not a window a loaded machine can stretch past.
// A call that never answers still fails the test, naming the call.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx := t.Context()
	deadline, ok := testDeadline(t)
	if !ok {
		return ctx
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	t.Cleanup(cancel)
	return ctx
}

// testDeadline is the test binary's -timeout less grace, when it has one.
func testDeadline(t testing.TB) (time.Time, bool) {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return time.Time{}, false
	}
	deadline, ok := d.Deadline()
	if !ok {
		return time.Time{}, false
	}
	return deadline.Add(-grace), true
}

// GiveUpAt is when a wait for an event gives up: grace before the test
// binary's -timeout, so that a loaded machine stretching the event fails
// nothing and the test still fails with its own message; without a
// -timeout, ten times patience (what the wait expects to take at most on a
// quiet machine).
func GiveUpAt(t testing.TB, patience time.Duration) time.Time {
	if deadline, ok := testDeadline(t); ok {
		return deadline
	}
	return time.Now().Add(10 * patience)
}

// WaitFor polls cond every interval until it holds. It is a wait for an
// event, not a timing assertion: after patience it logs that it is still
// waiting (what for, and for how long), and it fails the test only grace
// before the test binary's -timeout, so a loaded machine that stretches
// the event fails nothing. The interval is how much a poll may cost (a map
// lookup every millisecond, an HTTP request every 200ms).
func WaitFor(t testing.TB, patience, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	nextLog := start.Add(patience)
	deadline := GiveUpAt(t, patience)
	for !cond() {
		now := time.Now()
		if now.After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", now.Sub(start).Round(time.Second), what)
		}
		if now.After(nextLog) {
			t.Logf("still waiting for %s after %s", what, now.Sub(start).Round(time.Second))
			nextLog = now.Add(patience)
		}
		time.Sleep(interval)
	}
}
