package sink

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Defaults of MirrorConfig.
const (
	StreamPrefixDefault = "stream:"
	StreamMaxLenDefault = 10000
)

// MirrorConfig configures a Mirror.
type MirrorConfig struct {
	// Prefix names the stream of a channel: channel articles:news is
	// mirrored to Prefix + "articles:news". Defaults to StreamPrefixDefault.
	Prefix string
	// MaxLen caps each stream (approximately, MAXLEN ~). Defaults to
	// StreamMaxLenDefault.
	MaxLen int64
	// HashTag names the stream of a channel Prefix + "{" + channel + "}",
	// so that on a Redis Cluster the stream is on its channel's hash slot:
	// the shard that publishes a message with SPUBLISH also holds its
	// stream, and a consumer reads both from the same node. The Sharded
	// sink's mirror sets it.
	HashTag bool
}

func (c *MirrorConfig) setDefaults() {
	if c.Prefix == "" {
		c.Prefix = StreamPrefixDefault
	}
	if c.MaxLen <= 0 {
		c.MaxLen = StreamMaxLenDefault
	}
}

// Mirror is a Sink decorator that appends every message its inner sink
// published to a capped Redis stream per channel (XADD), so consumers that
// were offline can catch up. A failed XADD sets Result.MirrorErr and
// leaves the message published.
type Mirror struct {
	next   Sink
	client redis.UniversalClient
	cfg    MirrorConfig
}

// NewMirror returns next with its published messages mirrored to streams
// on client.
func NewMirror(next Sink, client redis.UniversalClient, cfg MirrorConfig) (*Mirror, error) {
	cfg.setDefaults()
	var errs []error
	if next == nil {
		errs = append(errs, errors.New("next sink is required"))
	}
	if client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new stream mirror: %w", err)
	}
	return &Mirror{next: next, client: client, cfg: cfg}, nil
}

// Stream returns the stream a channel is mirrored to.
func (m *Mirror) Stream(channel string) string {
	if m.cfg.HashTag {
		return m.cfg.Prefix + "{" + channel + "}"
	}
	return m.cfg.Prefix + channel
}

// Publish publishes through the inner sink, then appends the messages it
// published to their streams through one pipeline.
func (m *Mirror) Publish(ctx context.Context, msgs []Message) []Result {
	out := m.next.Publish(ctx, msgs)
	pipe := m.client.Pipeline()
	adds := make([]*redis.StringCmd, len(msgs))
	n := 0
	for i, msg := range msgs {
		if out[i].Err != nil {
			continue
		}
		adds[i] = pipe.XAdd(ctx, &redis.XAddArgs{Stream: m.Stream(msg.Channel), MaxLen: m.cfg.MaxLen, Approx: true,
			Values: []any{"message", msg.Body}})
		n++
	}
	if n == 0 {
		return out
	}
	abandoned := ExecPipeline(ctx, pipe)
	for i, add := range adds {
		switch {
		case add == nil:
		case abandoned != nil:
			out[i].MirrorErr = fmt.Errorf("stream mirror: %w", abandoned)
		case add.Err() != nil:
			out[i].MirrorErr = fmt.Errorf("stream mirror: %w", add.Err())
		}
	}
	return out
}

// Ping probes the inner sink: a mirror failure never fails a message, so it
// is no reason to stop publishing.
func (m *Mirror) Ping(ctx context.Context) error { return m.next.Ping(ctx) }
