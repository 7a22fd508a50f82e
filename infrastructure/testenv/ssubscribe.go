package testenv

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SSubscribe subscribes to each of channels with SSUBSCRIBE (sharded
// pub/sub, on the channel's slot of a Redis Cluster) and calls handle with
// every message's channel and payload, from one goroutine per channel,
// until the test ends. A subscription that fails (its master died) reloads
// the cluster's slot map and subscribes again: go-redis does not refresh
// the map by itself when a master is lost, and would keep dialling it.
func SSubscribe(t testing.TB, c *redis.ClusterClient, handle func(channel, payload string), channels ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var subs []*redis.PubSub
	for _, ch := range channels {
		ps := c.SSubscribe(ctx, ch)
		if _, err := ps.Receive(ctx); err != nil {
			cancel()
			t.Fatalf("ssubscribe %s: %v", ch, err)
		}
		subs = append(subs, ps)
		wg.Go(func() {
			for {
				msg, err := ps.Receive(ctx)
				switch {
				case ctx.Err() != nil || errors.Is(err, redis.ErrClosed):
					return
				case err != nil:
					c.ReloadState(ctx)
					time.Sleep(200 * time.Millisecond)
				default:
					if m, ok := msg.(*redis.Message); ok {
						handle(m.Channel, m.Payload)
					}
				}
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		for _, ps := range subs {
			_ = ps.Close()
		}
		wg.Wait()
	})
}
