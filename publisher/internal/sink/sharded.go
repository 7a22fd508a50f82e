package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Sharded publishes to a Redis Cluster with sharded pub/sub (SPUBLISH, Redis
// 7): a message goes to the master that owns its channel's hash slot and
// reaches the subscribers of that shard (SSUBSCRIBE), instead of being
// broadcast over the cluster bus to every node as PUBLISH is, so pub/sub
// throughput grows with the number of shards. A batch is one cluster
// pipeline: the client splits it by slot, sends each node its part in
// parallel and follows MOVED and ASK redirections.
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

// Publish sends every message with SPUBLISH through one cluster pipeline.
// Receivers counts the subscribers of the message's shard.
func (s *Sharded) Publish(ctx context.Context, msgs []Message) []Result {
	out := make([]Result, len(msgs))
	if len(msgs) == 0 {
		return out
	}
	pipe := s.client.Pipeline()
	cmds := make([]*redis.IntCmd, len(msgs))
	for i, m := range msgs {
		cmds[i] = pipe.SPublish(ctx, m.Channel, m.Body)
	}
	if err := ExecPipeline(ctx, pipe); err != nil {
		for i := range out {
			out[i] = Result{Err: fmt.Errorf("redis spublish: %w", err), Unavailable: true}
		}
		s.client.ReloadState(ctx)
		return out
	}
	stale := false
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			out[i] = Result{Err: fmt.Errorf("redis spublish: %w", err), Unavailable: ClusterUnavailable(err)}
			stale = stale || out[i].Unavailable
			continue
		}
		out[i] = Result{Receivers: cmd.Val()}
	}
	if stale {
		// go-redis reloads its slot map on a redirection, but not when a
		// master stops answering: without this it would keep dialling the
		// lost master after its replica has taken over.
		s.client.ReloadState(ctx)
	}
	return out
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
