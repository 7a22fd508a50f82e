package api

import (
	"net"
	"net/http"
	"net/netip"

	"github.com/north-cloud/infrastructure/httpserver"
)

// TrustedProxiesDefault trusts loopback only: natively the dashboard
// server reaches the index-manager over loopback and sets X-Forwarded-For,
// and only processes of the same host can connect from there.
const TrustedProxiesDefault = "127.0.0.0/8,::1/128"

// ParseTrustedProxies reads a comma-separated list of IP addresses and
// CIDR prefixes; "none" trusts no proxy.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) { return httpserver.ParseTrustedProxies(s) }

// ipv6ClientBits groups IPv6 clients by their /64: one host usually holds
// a whole /64, so counting single addresses would give it 2^64 budgets.
const ipv6ClientBits = 64

// clientAddr returns the address the login limits count r against: the
// TCP peer, or, when the peer is a trusted proxy, the nearest address of
// X-Forwarded-For that is not itself a trusted proxy (read from the right:
// entries left of it were written by the client and can be anything).
// IPv6 addresses are reduced to their /64.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	addr, ok := httpserver.ClientIP(r, trusted)
	if !ok {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	}
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, ipv6ClientBits).Masked().Addr()
	}
	return addr.String()
}
