package api

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/clock"

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

// TestFailureLimiterDelays: the free failures pass at once, then each
// failure makes the key wait twice as long as the last, up to the longest
// delay; attempts during a wait count nothing; a forgiven attempt is taken
// back, a reset or a quiet window forgets the key, and the key table stays
// bounded.
func TestFailureLimiterDelays(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Unix(1_800_000_000, 0))
	l := newFailureLimiter(2, 8*time.Second, time.Minute, clk.Clock())
	for i := range 2 {
		if _, ok := l.take("a"); !ok {
			t.Fatalf("free failure %d refused", i+1)
		}
	}
	for _, want := range []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		if want > 0 {
			if wait, ok := l.take("a"); ok || wait != want {
				t.Fatalf("during the delay: allowed %v, wait %s; want refused for %s", ok, wait, want)
			}
			clk.Advance(want - time.Millisecond)
			if wait, ok := l.take("a"); ok || wait != time.Millisecond {
				t.Fatalf("just before the delay ends: allowed %v, wait %s", ok, wait)
			}
			clk.Advance(time.Millisecond)
		}
		if _, ok := l.take("a"); !ok {
			t.Fatalf("refused after its delay of %s", want)
		}
	}
	if _, ok := l.take("b"); !ok {
		t.Fatal("another key is slowed down")
	}
	l.forgive("b")
	if n := l.size(); n != 1 {
		t.Fatalf("%d keys after forgiving b's only attempt, want 1", n)
	}
	clk.Advance(time.Minute)
	if _, ok := l.take("a"); !ok {
		t.Fatal("a key is not forgotten a window after its last failure")
	}
	l.reset("a")
	if n := l.size(); n != 0 {
		t.Fatalf("%d keys after reset", n)
	}
	for i := range maxLimiterKeys + 10 {
		l.take(fmt.Sprint("k", i))
	}
	if n := l.size(); n > maxLimiterKeys {
		t.Fatalf("%d keys kept, want at most %d", n, maxLimiterKeys)
	}
}

// TestClientAddr: the TCP peer is the client unless it is a trusted proxy;
// then the nearest untrusted address of X-Forwarded-For, read from the
// right, so entries a client prepends change nothing; IPv6 clients count
// by their /64.
func TestClientAddr(t *testing.T) {
	t.Parallel()
	trusted, err := ParseTrustedProxies(TrustedProxiesDefault + ",10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		remote string
		xff    []string
		want   string
	}{
		{"192.0.2.1:1000", nil, "192.0.2.1"},
		{"192.0.2.1:1000", []string{"198.51.100.7"}, "192.0.2.1"},              // untrusted peer: header ignored
		{"127.0.0.1:1000", []string{"198.51.100.7"}, "198.51.100.7"},           // the dashboard on loopback
		{"127.0.0.1:1000", []string{"6.6.6.6, 198.51.100.7"}, "198.51.100.7"},  // a client's own prefix ignored
		{"127.0.0.1:1000", []string{"198.51.100.7, 10.1.2.3"}, "198.51.100.7"}, // through two trusted hops
		{"127.0.0.1:1000", []string{"6.6.6.6", "198.51.100.7"}, "198.51.100.7"},
		{"127.0.0.1:1000", []string{"garbage"}, "127.0.0.1"},
		{"127.0.0.1:1000", nil, "127.0.0.1"},
		{"[::1]:1000", []string{"2001:db8:1:2:3:4:5:6"}, "2001:db8:1:2::"},
		{"[2001:db8::1]:1000", nil, "2001:db8::"},
		{"[::ffff:192.0.2.1]:1000", nil, "192.0.2.1"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = tt.remote
		for _, v := range tt.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := clientAddr(r, trusted); got != tt.want {
			t.Errorf("peer %s, X-Forwarded-For %q: %s, want %s", tt.remote, tt.xff, got, tt.want)
		}
	}
	if got, err := ParseTrustedProxies("none"); got != nil || err != nil {
		t.Errorf("none: %v %v", got, err)
	}
	if _, err := ParseTrustedProxies("127.0.0.1,not-an-ip"); err == nil {
		t.Error("not-an-ip accepted")
	}
}
