package testenv

import (
	"testing"
	"time"
)

// WaitFor polls cond every interval until it holds, and fails the test,
// naming what it waited for, once timeout has passed. It is a wait, not a
// timing assertion: the timeout only bounds a test that would otherwise
// hang, and the interval is how much a poll may cost (a map lookup every
// millisecond, an HTTP request every 200ms).
func WaitFor(t testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(interval)
	}
}
