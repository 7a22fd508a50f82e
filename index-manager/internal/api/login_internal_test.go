package api

import (
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// TestDummyHashHasTheAccountsCost: the hash an unknown user name is checked
// against has the bcrypt cost of the configured account's hash, so known
// and unknown names cost the same work.
func TestDummyHashHasTheAccountsCost(t *testing.T) {
	t.Parallel()
	for _, cost := range []int{bcrypt.MinCost, bcrypt.MinCost + 2} {
		hash, err := bcrypt.GenerateFromPassword([]byte("pw"), cost)
		if err != nil {
			t.Fatal(err)
		}
		dummy, err := dummyHashFor(Account{User: "op", PasswordHash: string(hash)})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := bcrypt.Cost(dummy); err != nil || got != cost {
			t.Fatalf("dummy hash cost %d (%v), want the account's %d", got, err, cost)
		}
	}
	if dummy, err := dummyHashFor(Account{}); dummy != nil || err != nil {
		t.Fatalf("without an account: %q %v", dummy, err)
	}
}

// TestFailureLimiterWindow: the limit blocks until the oldest failure
// leaves the window, a forgiven or reset attempt no longer counts, and the
// key table stays bounded.
func TestFailureLimiterWindow(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	l := newFailureLimiter(3, time.Minute)
	l.now = func() time.Time { return now }
	for range 3 {
		if _, _, ok := l.take("a"); !ok {
			t.Fatal("blocked before the limit")
		}
		now = now.Add(10 * time.Second)
	}
	_, wait, ok := l.take("a")
	if ok || wait != 30*time.Second {
		t.Fatalf("at the limit: allowed %v, wait %s; want refused for 30s", ok, wait)
	}
	now = now.Add(wait)
	at, _, ok := l.take("a")
	if !ok {
		t.Fatal("still blocked after the oldest failure left the window")
	}
	if _, _, ok := l.take("a"); ok {
		t.Fatal("not blocked again")
	}
	l.forgive("a", at)
	if _, _, ok := l.take("a"); !ok {
		t.Fatal("a forgiven attempt still counts")
	}
	l.reset("a")
	if n := len(l.failures["a"]); n != 0 {
		t.Fatalf("%d failures after reset", n)
	}
	for i := range maxLimiterKeys + 10 {
		l.take(string(rune('A'+i%26)) + time.Duration(i).String())
	}
	if n := len(l.failures); n > maxLimiterKeys {
		t.Fatalf("%d keys kept, want at most %d", n, maxLimiterKeys)
	}
}
