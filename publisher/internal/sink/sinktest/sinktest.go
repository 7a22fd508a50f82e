// Package sinktest is the conformance test every sink.Sink implementation
// runs against a real server: the Redis pub/sub sink, its stream mirror,
// and any sink added later (such as one for Redis Cluster with sharded
// pub/sub). A sink passes when it keeps the contract the outbox worker
// relies on: one result per message in order, receivers counted, a server
// outage reported as such on every message, a refusal of one channel
// reported on that message alone, and safe concurrent use.
package sinktest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/sink"
)

// Received is one message a subscriber got.
type Received struct {
	Channel string
	Body    string
}

// Harness is what Run needs of an implementation.
type Harness struct {
	// New returns the sink under test, publishing to a live server. Required.
	New func(t testing.TB) sink.Sink
	// Subscribe subscribes to channels on that server the way consumers of
	// this sink do, returns once the subscription is in place, and delivers
	// what arrives until the test ends. Required.
	Subscribe func(t testing.TB, channels ...string) <-chan Received
	// Unreachable returns the same kind of sink over a server that does
	// not answer. Required.
	Unreachable func(t testing.TB) sink.Sink
	// Restricted returns the same kind of sink as a user the server allows
	// to publish only to channels that start with prefix. Required.
	Restricted func(t testing.TB, prefix string) sink.Sink
}

// Run runs the conformance test.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Subscribe == nil || h.Unreachable == nil || h.Restricted == nil {
		t.Fatal("sinktest: Harness needs New, Subscribe, Unreachable and Restricted")
	}
	t.Run("PublishesInOrderWithReceivers", func(t *testing.T) { t.Parallel(); publishesInOrder(t, h) })
	t.Run("EmptyBatch", func(t *testing.T) { t.Parallel(); emptyBatch(t, h) })
	t.Run("CancelledContext", func(t *testing.T) { t.Parallel(); cancelled(t, h) })
	t.Run("UnreachableServer", func(t *testing.T) { t.Parallel(); unreachable(t, h) })
	t.Run("RefusedChannelIsPerMessage", func(t *testing.T) { t.Parallel(); refused(t, h) })
	t.Run("ConcurrentBatches", func(t *testing.T) { t.Parallel(); concurrent(t, h) })
}

func channel(name string) string { return testenv.UniqueName("sinktest:" + name + ":") }

func publishesInOrder(t *testing.T, h Harness) {
	s := h.New(t)
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping of a live server: %v", err)
	}
	heard, unheard := channel("heard"), channel("unheard")
	got := h.Subscribe(t, heard)
	var msgs []sink.Message
	for i := range 20 {
		ch := heard
		if i%3 == 1 {
			ch = unheard
		}
		msgs = append(msgs, sink.Message{Channel: ch, Body: []byte(fmt.Sprintf("m%d", i))})
	}
	res := s.Publish(context.Background(), msgs)
	if len(res) != len(msgs) {
		t.Fatalf("%d results for %d messages", len(res), len(msgs))
	}
	var want []string
	for i, r := range res {
		if r.Err != nil || r.MirrorErr != nil {
			t.Errorf("message %d: %v (mirror %v)", i, r.Err, r.MirrorErr)
		}
		switch msgs[i].Channel {
		case heard:
			want = append(want, string(msgs[i].Body))
			if r.Receivers != 1 {
				t.Errorf("message %d on a channel with one subscriber: %d receivers", i, r.Receivers)
			}
		default:
			if r.Receivers != 0 {
				t.Errorf("message %d on a channel nobody listens to: %d receivers", i, r.Receivers)
			}
		}
	}
	for i, w := range want {
		m := <-got
		if m.Channel != heard || m.Body != w {
			t.Fatalf("received #%d: %+v, want %q on %s (in publish order)", i, m, w, heard)
		}
	}
}

func emptyBatch(t *testing.T, h Harness) {
	if res := h.New(t).Publish(context.Background(), nil); len(res) != 0 {
		t.Errorf("empty batch: %d results", len(res))
	}
}

func cancelled(t *testing.T, h Harness) {
	s := h.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msgs := []sink.Message{{Channel: channel("c"), Body: []byte("a")}, {Channel: channel("c"), Body: []byte("b")}}
	res := s.Publish(ctx, msgs)
	if len(res) != len(msgs) {
		t.Fatalf("%d results for %d messages", len(res), len(msgs))
	}
	for i, r := range res {
		if r.Err == nil || !r.Unavailable {
			t.Errorf("message %d with a cancelled context: err %v, unavailable %v; want an error marked unavailable", i, r.Err, r.Unavailable)
		}
	}
}

func unreachable(t *testing.T, h Harness) {
	s := h.Unreachable(t)
	if err := s.Ping(context.Background()); err == nil {
		t.Error("Ping of an unreachable server succeeded")
	}
	msgs := []sink.Message{{Channel: channel("c"), Body: []byte("a")}, {Channel: channel("d"), Body: []byte("b")}}
	res := s.Publish(context.Background(), msgs)
	if len(res) != len(msgs) {
		t.Fatalf("%d results for %d messages", len(res), len(msgs))
	}
	for i, r := range res {
		if r.Err == nil || !r.Unavailable {
			t.Errorf("message %d to an unreachable server: err %v, unavailable %v; want an error marked unavailable", i, r.Err, r.Unavailable)
		}
	}
}

func refused(t *testing.T, h Harness) {
	prefix := channel("allowed")
	allowed, denied := prefix+"news", channel("denied")
	s := h.Restricted(t, prefix)
	if err := s.Ping(context.Background()); err != nil {
		t.Errorf("Ping as a user refused one channel: %v (the server is usable)", err)
	}
	msgs := []sink.Message{{Channel: allowed, Body: []byte("a")}, {Channel: denied, Body: []byte("b")}, {Channel: allowed, Body: []byte("c")}}
	res := s.Publish(context.Background(), msgs)
	if len(res) != len(msgs) {
		t.Fatalf("%d results for %d messages", len(res), len(msgs))
	}
	if r := res[1]; r.Err == nil || r.Unavailable {
		t.Errorf("refused channel: err %v, unavailable %v; want an error for this message alone", r.Err, r.Unavailable)
	}
	for _, i := range []int{0, 2} {
		if res[i].Err != nil {
			t.Errorf("message %d on an allowed channel: %v", i, res[i].Err)
		}
	}
}

func concurrent(t *testing.T, h Harness) {
	s := h.New(t)
	ch := channel("concurrent")
	got := h.Subscribe(t, ch)
	const workers, per = 4, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs := make([]sink.Message, per)
			for i := range msgs {
				msgs[i] = sink.Message{Channel: ch, Body: []byte(fmt.Sprintf("%d-%d", w, i))}
			}
			for i, r := range s.Publish(context.Background(), msgs) {
				if r.Err != nil {
					t.Errorf("worker %d message %d: %v", w, i, r.Err)
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for range workers * per {
		m := <-got
		if seen[m.Body] {
			t.Errorf("%s received twice", m.Body)
		}
		seen[m.Body] = true
	}
}
