package testenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/testenv"
)

// TestPrivateRedisRestartEndsSubscriptionsAndComesBack checks what the
// soak's Redis restart relies on: a restart closes the clients'
// connections (a subscriber sees its subscription end) and the server
// answers again on the same address afterwards.
func TestPrivateRedisRestartEndsSubscriptionsAndComesBack(t *testing.T) {
	t.Parallel()
	r := testenv.PrivateRedis(t)
	c := r.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub := c.Subscribe(ctx, "restart-probe")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	before, err := c.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	// A stream entry written just before the stop is there after it (the
	// append-only file is flushed at a clean stop).
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "restart-stream", Values: []any{"k", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}

	r.Restart(0)

	if n, err := c.XLen(ctx, "restart-stream").Result(); err != nil || n != 1 {
		t.Fatalf("the stream after the restart: %d entries, %v; want the 1 written before", n, err)
	}

	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping after the restart: %v", err)
	}
	after, err := c.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if runID(before) == "" || runID(before) == runID(after) {
		t.Fatalf("run_id %q before and %q after: the server was not restarted", runID(before), runID(after))
	}
	// go-redis resubscribes after the connection drops; a message
	// published now reaches the subscriber again.
	got := make(chan string, 1)
	go func() {
		defer close(got)
		for ctx.Err() == nil {
			// The first receive may return the dropped connection's error.
			if m, err := sub.ReceiveMessage(ctx); err == nil {
				got <- m.Payload
				return
			}
		}
	}()
	for {
		if err := c.Publish(ctx, "restart-probe", "hello").Err(); err != nil {
			t.Fatalf("publish: %v", err)
		}
		select {
		case p := <-got:
			if p != "hello" {
				t.Fatalf("received %q, want hello", p)
			}
			return
		case <-ctx.Done():
			t.Fatal("no message after the restart within a minute")
		case <-time.After(100 * time.Millisecond): // publish again until the resubscription lands
		}
	}
}

func runID(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	return ""
}
