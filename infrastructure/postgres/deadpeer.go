package postgres

import (
	"context"
	"net"
	"time"
)

// DeadPeerTimeout is about how long a connection to a database that stopped
// answering (its host gone, the network between cut) takes to fail. lib/pq
// sets no socket deadline: without it a statement sent to such a database
// waits for the kernel to give up, 15 minutes and more, and holds its caller
// (a commit worker, a claim loop) instead of failing as an outage that a
// breaker can see. Keepalives find a silent peer while a statement waits for
// its answer; TCP_USER_TIMEOUT (Linux) closes a connection whose sent data
// stays unacknowledged as long.
const DeadPeerTimeout = 20 * time.Second

// deadPeerDialer is lib/pq's dialer with keepalives and a user timeout that
// fail a dead peer's connection in about DeadPeerTimeout.
type deadPeerDialer struct{ d net.Dialer }

func newDeadPeerDialer() deadPeerDialer {
	return deadPeerDialer{d: net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: DeadPeerTimeout / 2, Interval: DeadPeerTimeout / 8, Count: 4},
		Control:         userTimeout(DeadPeerTimeout),
	}}
}

func (p deadPeerDialer) Dial(network, address string) (net.Conn, error) {
	return p.d.Dial(network, address)
}

func (p deadPeerDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	d := p.d
	d.Timeout = timeout
	return d.Dial(network, address)
}

func (p deadPeerDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return p.d.DialContext(ctx, network, address)
}
