package pgnotify

import (
	"context"
	"runtime"
	"testing"

	"github.com/lib/pq"

	"github.com/north-cloud/infrastructure/testenv"
)

// Notifications that arrive while the consumer is busy become one Wakeup
// holding the latest payload of each channel; a reconnect marks it.
func TestForwardCoalesces(t *testing.T) {
	t.Parallel()
	n, err := New(Config{URL: "postgres://unused", Channels: []string{"a", "b"}, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	in := make(chan *pq.Notification, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.forward(ctx, in) }()
	defer func() { cancel(); <-done }()

	in <- &pq.Notification{Channel: "a", Extra: "1"}
	in <- &pq.Notification{Channel: "b", Extra: "x"}
	in <- nil // a reconnect
	in <- &pq.Notification{Channel: "a", Extra: "2"}
	for len(in) > 0 { // the consumer is busy until every notification was read
		runtime.Gosched()
	}
	w := <-n.C()
	if w.Notifications != 3 || !w.Reconnected || w.Payloads["a"] != "2" || w.Payloads["b"] != "x" {
		t.Fatalf("coalesced wake-up %+v", w)
	}
	in <- &pq.Notification{Channel: "b", Extra: "y"}
	w = <-n.C()
	if w.Notifications != 1 || w.Reconnected || len(w.Payloads) != 1 || w.Payloads["b"] != "y" {
		t.Fatalf("next wake-up %+v, want only b=y", w)
	}
}
