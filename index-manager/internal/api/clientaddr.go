package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// TrustedProxiesDefault trusts loopback only: natively the dashboard
// server reaches the index-manager over loopback and sets X-Forwarded-For,
// and only processes of the same host can connect from there.
const TrustedProxiesDefault = "127.0.0.0/8,::1/128"

// ParseTrustedProxies reads a comma-separated list of IP addresses and
// CIDR prefixes; "none" trusts no proxy.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	if strings.TrimSpace(s) == "none" {
		return nil, nil
	}
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", part)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// ipv6ClientBits groups IPv6 clients by their /64: one host usually holds
// a whole /64, so counting single addresses would give it 2^64 budgets.
const ipv6ClientBits = 64

// clientAddr returns the address the login limits count r against: the
// TCP peer, or, when the peer is a trusted proxy, the nearest address of
// X-Forwarded-For that is not itself a trusted proxy (read from the right:
// entries left of it were written by the client and can be anything).
// IPv6 addresses are reduced to their /64.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr := peer.Unmap()
	if isTrusted(addr, trusted) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // garbage: keep the last address a trusted hop vouched for
			}
			addr = hop.Unmap()
			if !isTrusted(addr, trusted) {
				break
			}
		}
	}
	addr = addr.WithZone("")
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, ipv6ClientBits).Masked().Addr()
	}
	return addr.String()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
