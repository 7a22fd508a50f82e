package httpserver_test

import (
	"net/http/httptest"
	"testing"

	"github.com/north-cloud/infrastructure/httpserver"
)

// ClientIP believes X-Forwarded-For only from a trusted peer, walks it from
// the right past trusted hops, and stops at garbage on the last address a
// trusted hop vouched for.
func TestClientIP(t *testing.T) {
	t.Parallel()
	trusted, err := httpserver.ParseTrustedProxies("127.0.0.1, 10.0.0.0/8, ::1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ peer, xff, want string }{
		{"192.0.2.1:5000", "203.0.113.9", "192.0.2.1"}, // an untrusted peer's header is ignored
		{"127.0.0.1:5000", "", "127.0.0.1"},
		{"127.0.0.1:5000", "198.51.100.1, 203.0.113.9", "203.0.113.9"},
		{"127.0.0.1:5000", "203.0.113.9, 10.9.9.9", "203.0.113.9"},
		{"127.0.0.1:5000", "nonsense, 10.9.9.9", "10.9.9.9"},
		{"[::1]:5000", "2001:db8::7", "2001:db8::7"},
		{"[::ffff:127.0.0.1]:5000", "203.0.113.9", "203.0.113.9"}, // a v4-mapped peer is the v4 address
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.peer
		if tt.xff != "" {
			r.Header.Set("X-Forwarded-For", tt.xff)
		}
		got, ok := httpserver.ClientIP(r, trusted)
		if !ok || got.String() != tt.want {
			t.Errorf("peer %s, X-Forwarded-For %q: %v %v, want %s", tt.peer, tt.xff, got, ok, tt.want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "@unix"
	if _, ok := httpserver.ClientIP(r, trusted); ok {
		t.Error("a peer that is not an IP address gave an address")
	}
	if p, err := httpserver.ParseTrustedProxies("none"); p != nil || err != nil {
		t.Errorf("none: %v %v", p, err)
	}
	if _, err := httpserver.ParseTrustedProxies("10.0.0.1,proxy"); err == nil {
		t.Error("a host name was accepted")
	}
}
