package sink_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/sink"
	"github.com/north-cloud/publisher/internal/sink/sinktest"
)

// redisHarness runs the conformance test against a redis-server of the
// test's own; wrap turns the pub/sub sink into the sink under test.
func redisHarness(t *testing.T, wrap func(t testing.TB, s sink.Sink, c redis.UniversalClient) sink.Sink) sinktest.Harness {
	rs := outboxtest.StartRedis(t)
	build := func(t testing.TB, c *redis.Client) sink.Sink {
		s, err := sink.NewRedis(c)
		if err != nil {
			t.Fatal(err)
		}
		return wrap(t, s, c)
	}
	return sinktest.Harness{
		New: func(t testing.TB) sink.Sink { return build(t, rs.Client()) },
		Subscribe: func(t testing.TB, channels ...string) <-chan sinktest.Received {
			return subscribe(t, rs.Client(), channels...)
		},
		Unreachable: func(t testing.TB) sink.Sink {
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
			t.Cleanup(func() { _ = c.Close() })
			return build(t, c)
		},
		Restricted: func(t testing.TB, prefix string) sink.Sink {
			user := testenv.UniqueName("sinkuser")
			if err := rs.Client().Do(context.Background(), "ACL", "SETUSER", user, "on", ">pw", "allkeys", "+@all",
				"resetchannels", "&"+prefix+"*").Err(); err != nil {
				t.Fatal(err)
			}
			c := redis.NewClient(&redis.Options{Addr: rs.Addr, Username: user, Password: "pw", MaxRetries: -1})
			t.Cleanup(func() { _ = c.Close() })
			return build(t, c)
		},
	}
}

// subscribe subscribes to channels and forwards what arrives until the test
// ends.
func subscribe(t testing.TB, c *redis.Client, channels ...string) <-chan sinktest.Received {
	t.Helper()
	ps := c.Subscribe(context.Background(), channels...)
	for range channels {
		if _, err := ps.Receive(context.Background()); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
	}
	out := make(chan sinktest.Received, 1000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range ps.Channel() {
			out <- sinktest.Received{Channel: m.Channel, Body: m.Payload}
		}
	}()
	t.Cleanup(func() { _ = ps.Close(); <-done })
	return out
}

func TestRedisConformance(t *testing.T) {
	t.Parallel()
	sinktest.Run(t, redisHarness(t, func(_ testing.TB, s sink.Sink, _ redis.UniversalClient) sink.Sink { return s }))
}

func TestMirrorConformance(t *testing.T) {
	t.Parallel()
	sinktest.Run(t, redisHarness(t, func(t testing.TB, s sink.Sink, c redis.UniversalClient) sink.Sink {
		m, err := sink.NewMirror(s, c, sink.MirrorConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}))
}

// The mirror appends what was published to the channel's stream, not what
// was refused; a failed XADD leaves the message published.
func TestMirrorStreams(t *testing.T) {
	t.Parallel()
	rs := outboxtest.StartRedis(t)
	admin := rs.Client()
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "mirror", "on", ">pw", "allkeys", "+@all", "resetchannels", "&ok:*").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: rs.Addr, Username: "mirror", Password: "pw", MaxRetries: -1})
	defer c.Close()
	inner, err := sink.NewRedis(c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sink.NewMirror(inner, c, sink.MirrorConfig{MaxLen: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctx, m.Stream("ok:broken"), "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	res := m.Publish(ctx, []sink.Message{
		{Channel: "ok:news", Body: []byte("1")},
		{Channel: "refused", Body: []byte("2")},
		{Channel: "ok:broken", Body: []byte("3")},
		{Channel: "ok:news", Body: []byte("4")},
	})
	if res[0].Err != nil || res[0].MirrorErr != nil || res[3].Err != nil || res[3].MirrorErr != nil {
		t.Errorf("mirrored messages: %+v %+v", res[0], res[3])
	}
	if res[1].Err == nil || res[1].MirrorErr != nil {
		t.Errorf("refused message: %+v, want its publish error and no mirror", res[1])
	}
	if res[2].Err != nil || res[2].MirrorErr == nil {
		t.Errorf("message whose stream is broken: %+v, want published with a mirror error", res[2])
	}
	entries, err := admin.XRange(ctx, m.Stream("ok:news"), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Values["message"] != "1" || entries[1].Values["message"] != "4" {
		t.Errorf("stream ok:news: %+v", entries)
	}
	if n, err := admin.Exists(ctx, m.Stream("refused")).Result(); err != nil || n != 0 {
		t.Errorf("a refused message was mirrored: %d %v", n, err)
	}
}

func TestConstructorsRequireTheirParts(t *testing.T) {
	t.Parallel()
	if _, err := sink.NewRedis(nil); err == nil {
		t.Error("NewRedis(nil) succeeded")
	}
	if _, err := sink.NewMirror(nil, nil, sink.MirrorConfig{}); err == nil {
		t.Error("NewMirror(nil, nil) succeeded")
	}
}
