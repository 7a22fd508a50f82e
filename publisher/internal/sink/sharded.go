package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Sharded publishes to a Redis Cluster with sharded pub/sub (SPUBLISH, Redis
// 7): a message goes to the master that owns its channel's hash slot and
// reaches the subscribers of that shard (SSUBSCRIBE), instead of being
// broadcast over the cluster bus to every node as PUBLISH is, so pub/sub
// throughput grows with the number of shards. A batch is one cluster
// pipeline per channel, the pipelines run in parallel, and the client
// follows MOVED and ASK redirections.
//
// One pipeline per channel (a channel is one hash slot, so one shard)
// keeps a stalled shard's outcome from spreading to the others. In a single
// cluster pipeline, a shard that does not answer before the deadline makes
// the client give every command of the batch the deadline's error, those the
// healthy shards had already delivered included; their rows would be
// released and published again, a duplicate for every subscriber of a
// healthy shard.
//
// A failover (a master lost, its replica promoted) is an outage of the
// shard, not a failure of the messages: connection errors, CLUSTERDOWN,
// TRYAGAIN and redirections the client gave up following are all
// Unavailable, so the worker releases the rows without spending a retry and
// opens its Redis breaker; Ping closes it only when every master answers
// again.
type Sharded struct {
	client *redis.ClusterClient
}

// NewSharded returns a sharded pub/sub sink over a cluster client.
func NewSharded(client *redis.ClusterClient) (*Sharded, error) {
	if client == nil {
		return nil, errors.New("new sharded redis sink: client is required")
	}
	return &Sharded{client: client}, nil
}

// Publish sends every message with SPUBLISH, one pipeline per channel, at
// most maxParallelPipelines at once. Receivers counts the subscribers of
// the message's shard.
func (s *Sharded) Publish(ctx context.Context, msgs []Message) []Result {
	out := make([]Result, len(msgs))
	byChannel := map[string][]int{}
	for i, m := range msgs {
		byChannel[m.Channel] = append(byChannel[m.Channel], i)
	}
	var stale atomic.Bool
	slots := make(chan struct{}, maxParallelPipelines)
	var wg sync.WaitGroup
	for _, idx := range byChannel {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if s.publishChannel(ctx, msgs, idx, out) {
				stale.Store(true)
			}
		})
	}
	wg.Wait()
	if stale.Load() {
		// go-redis reloads its slot map on a redirection, but not when a
		// master stops answering: without this it would keep dialling the
		// lost master after its replica has taken over.
		s.client.ReloadState(ctx)
	}
	return out
}

// maxParallelPipelines bounds the pipelines of one batch in flight.
const maxParallelPipelines = 16

// publishChannel sends the messages msgs[idx] (all on one channel) through
// one pipeline and writes their results to out[idx]. It reports whether a
// result was Unavailable (the slot map may be stale).
func (s *Sharded) publishChannel(ctx context.Context, msgs []Message, idx []int, out []Result) (unavailable bool) {
	pipe := s.client.Pipeline()
	cmds := make([]*redis.IntCmd, len(idx))
	for j, i := range idx {
		cmds[j] = pipe.SPublish(ctx, msgs[i].Channel, msgs[i].Body)
	}
	if err := ExecPipeline(ctx, pipe); err != nil {
		for _, i := range idx {
			out[i] = Result{Err: fmt.Errorf("redis spublish: %w", err), Unavailable: true}
		}
		return true
	}
	for j, cmd := range cmds {
		i := idx[j]
		if err := cmd.Err(); err != nil {
			out[i] = Result{Err: fmt.Errorf("redis spublish: %w", err), Unavailable: ClusterUnavailable(err)}
			unavailable = unavailable || out[i].Unavailable
			continue
		}
		out[i] = Result{Receivers: cmd.Val()}
	}
	return unavailable
}

// Ping checks that every master of the cluster answers PING (the slot map
// is reloaded first, so a promoted replica counts as the master it
// replaced), then sends an empty SPUBLISH to ProbeChannel, which a user
// without the command would fail. While a shard has no reachable master the
// probe fails and the breaker stays open: publishing the other shards'
// messages meanwhile would only release the rest again and again.
func (s *Sharded) Ping(ctx context.Context) error {
	err := s.client.ForEachMaster(ctx, func(ctx context.Context, master *redis.Client) error {
		if err := master.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("master %s: %w", master.Options().Addr, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis cluster ping: %w", err)
	}
	if err := s.client.SPublish(ctx, ProbeChannel, "").Err(); err != nil && ClusterUnavailable(err) {
		return fmt.Errorf("redis cluster probe spublish: %w", err)
	}
	return nil
}

// ClusterUnavailable is RedisUnavailable for a Redis Cluster: also a MOVED
// or ASK redirection the client gave up following (its slot map is behind
// a failover or a resharding in progress), which would meet every message
// of the slot and passes once the cluster settles.
func ClusterUnavailable(err error) bool {
	if RedisUnavailable(err) {
		return true
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
	}
	return false
}
