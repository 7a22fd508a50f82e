package api_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/clock"
)

// login posts a JSON login from remote (host:port), with extra headers.
func (b *bundle) login(user, password, remote string, header map[string]string) response {
	b.t.Helper()
	return b.do(request{Method: "POST", Path: "/api/v1/auth/login", Token: ptr(""), Remote: remote, Header: header,
		Body: map[string]string{"username": user, "password": password}})
}

func retryAfter(t *testing.T, r response) int {
	t.Helper()
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if code, _ := r.errorOf(t); r.Status != http.StatusTooManyRequests || code != "too_many_attempts" || err != nil || secs < 1 {
		t.Fatalf("%d %s Retry-After %q, want 429 too_many_attempts with Retry-After", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	return secs
}

// TestLoginTakesJSONOnly: a login whose Content-Type is not JSON (a
// cross-site form or text/plain post, which a browser sends without a
// preflight) gets 415 before anything is counted: six of them with the
// wrong password, then the right one, from the same address, log in.
func TestLoginTakesJSONOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	const remote = "192.0.2.50:1000"
	body := fmt.Sprintf(`{"username":%q,"password":"wrong"}`, adminUser)
	for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonx", "json"} {
		for range 6 {
			r := b.do(request{Method: "POST", Path: "/api/v1/auth/login", Token: ptr(""), Remote: remote, Body: body,
				Header: map[string]string{"Content-Type": ct}})
			if code, _ := r.errorOf(t); r.Status != http.StatusUnsupportedMediaType || code != "unsupported_media_type" {
				t.Fatalf("Content-Type %q: %d %s, want 415", ct, r.Status, r.Body)
			}
		}
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		r := b.do(request{Method: "POST", Path: "/api/v1/auth/login", Token: ptr(""), Remote: remote,
			Body: fmt.Sprintf(`{"username":%q,"password":%q}`, adminUser, adminPassword), Header: map[string]string{"Content-Type": ct}})
		if r.Status != http.StatusOK {
			t.Fatalf("Content-Type %q after the refused posts: %d %s, want 200 (nothing counted)", ct, r.Status, r.Body)
		}
	}
}

// TestLoginAttackerCannotLockOutTheOperator: an attacker hammering the
// operator's user name from one address is slowed down with growing
// delays (429 and Retry-After, even with the right password from there),
// while the right password from an address with no failures logs in at
// once, every time.
func TestLoginAttackerCannotLockOutTheOperator(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Unix(1_800_000_000, 0))
	b := setup(t, options{clock: clk})
	const attacker, operator = "203.0.113.66:4000", "198.51.100.7:2000"

	// The free failures are answered at once.
	for i := range api.LoginFailuresPerUserDefault {
		if r := b.login(adminUser, "wrong", attacker, nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("free failure %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	// Then every failure makes the attacker wait twice as long.
	var delays []int
	for range 6 {
		if r := b.login(adminUser, "wrong", attacker, nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("failure after the wait: %d %s", r.Status, r.Body)
		}
		secs := retryAfter(t, b.login(adminUser, adminPassword, attacker, nil))
		delays = append(delays, secs)
		if r := b.login(adminUser, adminPassword, operator, nil); r.Status != http.StatusOK {
			t.Fatalf("the operator's right password from another address while the attacker waits: %d %s", r.Status, r.Body)
		}
		clk.Advance(time.Duration(secs) * time.Second)
	}
	if fmt.Sprint(delays) != "[1 2 4 8 16 32]" {
		t.Fatalf("delays %v, want doubling from 1s", delays)
	}
	// After its wait, the right password logs in from the attacker's
	// address too (a slowed-down operator is never locked out).
	if r := b.login(adminUser, adminPassword, attacker, nil); r.Status != http.StatusOK {
		t.Fatalf("right password after the wait: %d %s", r.Status, r.Body)
	}
}

// TestLoginAddressBudget: failures under many user names from one address
// slow that address down for every name, and no other address.
func TestLoginAddressBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	const sprayer = "203.0.113.9:3000"
	for i := range api.LoginFailuresPerAddressDefault + 1 {
		if r := b.login(fmt.Sprintf("guess-%d", i), "wrong", sprayer, nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d %s", i, r.Status, r.Body)
		}
	}
	retryAfter(t, b.login("guess-new", "wrong", sprayer, nil))
	retryAfter(t, b.login(adminUser, adminPassword, sprayer, nil))
	if r := b.login(adminUser, adminPassword, "198.51.100.8:1", nil); r.Status != http.StatusOK {
		t.Fatalf("another address: %d %s", r.Status, r.Body)
	}
}

// TestLoginForwardedForFromTrustedProxyOnly: behind a trusted proxy (the
// dashboard server) each browser has its own budget, named by
// X-Forwarded-For; from any other peer the header is ignored, so a client
// cannot pick a fresh address for each guess.
func TestLoginForwardedForFromTrustedProxyOnly(t *testing.T) {
	t.Parallel()
	trusted, err := api.ParseTrustedProxies(api.TrustedProxiesDefault)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(time.Unix(1_800_000_000, 0))
	b := setup(t, options{trusted: trusted, clock: clk})
	xff := func(a string) map[string]string { return map[string]string{"X-Forwarded-For": a} }

	// Through the proxy: the attacker's browser is slowed down, the
	// operator's browser behind the same proxy is not.
	const proxy = "127.0.0.1:5555"
	for range api.LoginFailuresPerUserDefault + 1 {
		b.login(adminUser, "wrong", proxy, xff("203.0.113.66"))
	}
	retryAfter(t, b.login(adminUser, adminPassword, proxy, xff("203.0.113.66")))
	if r := b.login(adminUser, adminPassword, proxy, xff("198.51.100.7")); r.Status != http.StatusOK {
		t.Fatalf("another browser behind the trusted proxy: %d %s", r.Status, r.Body)
	}

	// From an untrusted peer, a new X-Forwarded-For per guess is still the
	// same client.
	const direct = "192.0.2.77:6000"
	for i := range api.LoginFailuresPerUserDefault + 1 {
		b.login(adminUser, "wrong", direct, xff(fmt.Sprintf("10.9.8.%d", i)))
	}
	retryAfter(t, b.login(adminUser, adminPassword, direct, xff("10.9.8.200")))

	// Without trusted proxies every browser behind the proxy is one client.
	nobody := setup(t, options{trusted: []netip.Prefix(nil), clock: clk})
	for range api.LoginFailuresPerUserDefault + 1 {
		nobody.login(adminUser, "wrong", proxy, xff("203.0.113.66"))
	}
	retryAfter(t, nobody.login(adminUser, adminPassword, proxy, xff("198.51.100.7")))
}
