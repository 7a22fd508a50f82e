package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ProbeChannel is the channel Redis.Ping publishes an empty message to (no
// consumer subscribes to it).
const ProbeChannel = "publisher:probe"

// Redis publishes to Redis pub/sub with PUBLISH, a batch through one
// pipeline (one round trip).
type Redis struct {
	client redis.UniversalClient
}

// NewRedis returns a pub/sub sink over client.
func NewRedis(client redis.UniversalClient) (*Redis, error) {
	if client == nil {
		return nil, errors.New("new redis sink: client is required")
	}
	return &Redis{client: client}, nil
}

// Publish sends every message with PUBLISH through one pipeline.
func (r *Redis) Publish(ctx context.Context, msgs []Message) []Result {
	out := make([]Result, len(msgs))
	if len(msgs) == 0 {
		return out
	}
	pipe := r.client.Pipeline()
	cmds := make([]*redis.IntCmd, len(msgs))
	for i, m := range msgs {
		cmds[i] = pipe.Publish(ctx, m.Channel, m.Body)
	}
	if err := ExecPipeline(ctx, pipe); err != nil {
		for i := range out {
			out[i] = Result{Err: fmt.Errorf("redis publish: %w", err), Unavailable: true}
		}
		return out
	}
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			out[i] = Result{Err: fmt.Errorf("redis publish: %w", err), Unavailable: RedisUnavailable(err)}
			continue
		}
		out[i] = Result{Receivers: cmd.Val()}
	}
	return out
}

// Ping is PING, then an empty PUBLISH to ProbeChannel, because PING still
// answers when the server refuses PUBLISH to this user (an ACL without the
// command): with PING alone a breaker would close and reopen at every
// probe. A refusal about the probe channel itself (an ACL limited to the
// content channels) means PUBLISH works, so it counts as success.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	if err := r.client.Publish(ctx, ProbeChannel, "").Err(); err != nil && RedisUnavailable(err) {
		return fmt.Errorf("redis probe publish: %w", err)
	}
	return nil
}

// ExecPipeline runs pipe and returns ctx's error if ctx ends first; each
// command then carries its own error. go-redis bounds a round trip by the
// context's deadline but does not abandon it when the context is cancelled
// (a worker stopping near its deadline), so the pipeline runs aside and a
// cancelled caller stops waiting for it; that goroutine ends with the round
// trip, within the deadline.
func ExecPipeline(ctx context.Context, pipe redis.Pipeliner) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = pipe.Exec(ctx) // every command carries its own error
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// redisUnavailableReplies are Redis error replies (by their first word, or
// in full) that describe the server or the connection, not the message:
// the same reply would meet every message.
func redisUnavailableReplies() []string {
	return []string{
		"NOAUTH", "WRONGPASS", // credentials missing or refused
		"MISCONF",                              // cannot persist: writes refused
		"OOM",                                  // maxmemory reached
		"LOADING",                              // loading the dataset at start-up
		"READONLY", "MASTERDOWN", "NOREPLICAS", // replica, lost master, min-replicas unmet
		"CLUSTERDOWN", "TRYAGAIN", // cluster unavailable or resharding
		"BUSY",                              // a script or function is running
		"ERR max number of clients reached", // no connection slot
	}
}

// RedisUnavailable reports whether err is a failure of Redis itself rather
// than an error reply about one command's arguments: network errors,
// timeouts and a closed client; the replies about the server or the
// connection (NOAUTH, WRONGPASS, MISCONF, OOM, LOADING, READONLY,
// MASTERDOWN, NOREPLICAS, CLUSTERDOWN, TRYAGAIN, BUSY, max clients); and
// NOPERM when the user may not run the command at all ("no permissions to
// run the 'publish' command": every message would meet it). NOPERM for a
// channel or key ("no permissions to access one of the channels") concerns
// that message's channel: it stays a per-message failure with retries, so
// one channel the ACL refuses stops nothing else. Every Redis-based sink
// classifies its errors with it.
func RedisUnavailable(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return true // network error, timeout, closed pool
	}
	msg := reply.Error()
	for _, p := range redisUnavailableReplies() {
		if msg == p || strings.HasPrefix(msg, p+" ") {
			return true
		}
	}
	return strings.HasPrefix(msg, "NOPERM ") && strings.Contains(msg, "permissions to run")
}
