package sink_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/sink"
	"github.com/north-cloud/publisher/internal/sink/sinktest"
)

// The tests of this file run against the Redis Cluster of
// scripts/services.sh (NC_REDIS_CLUSTER=1): without that setting they skip,
// with it a cluster that does not answer fails them under CI=true. Their
// names start with TestCluster: the main test stage leaves them out and the
// cluster stage of scripts/test.sh runs them.

// recorder remembers the channels a sink published to, so the test deletes
// the streams it made on the shared cluster and nothing else.
type recorder struct {
	sink.Sink
	mu       sync.Mutex
	channels map[string]bool
}

func (r *recorder) Publish(ctx context.Context, msgs []sink.Message) []sink.Result {
	r.mu.Lock()
	for _, m := range msgs {
		r.channels[m.Channel] = true
	}
	r.mu.Unlock()
	return r.Sink.Publish(ctx, msgs)
}

// shardedHarness runs the conformance test against the cluster; mirror
// adds the stream mirror (with hash tags) around the sharded sink.
func shardedHarness(t *testing.T, mirror bool) sinktest.Harness {
	c := testenv.RedisCluster(t)
	build := func(t testing.TB, client *redis.ClusterClient) sink.Sink {
		s, err := sink.NewSharded(client)
		if err != nil {
			t.Fatal(err)
		}
		if !mirror {
			return s
		}
		m, err := sink.NewMirror(s, client, sink.MirrorConfig{HashTag: true})
		if err != nil {
			t.Fatal(err)
		}
		r := &recorder{Sink: m, channels: map[string]bool{}}
		t.Cleanup(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			for ch := range r.channels {
				_ = c.Del(context.Background(), m.Stream(ch)).Err()
			}
		})
		return r
	}
	return sinktest.Harness{
		New: func(t testing.TB) sink.Sink { return build(t, c) },
		Subscribe: func(t testing.TB, channels ...string) <-chan sinktest.Received {
			return sSubscribe(t, c, channels...)
		},
		Unreachable: func(t testing.TB) sink.Sink {
			u := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: -1, DialTimeout: time.Second})
			t.Cleanup(func() { _ = u.Close() })
			return build(t, u)
		},
		Restricted: func(t testing.TB, prefix string) sink.Sink {
			// ACLs are per node: the user goes on every master and replica.
			user := testenv.UniqueName("sinkuser")
			ctx := context.Background()
			if err := c.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
				return node.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "allkeys", "+@all", "resetchannels", "&"+prefix+"*").Err()
			}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = c.ForEachShard(context.Background(), func(ctx context.Context, node *redis.Client) error {
					return node.Do(ctx, "ACL", "DELUSER", user).Err()
				})
			})
			opts := c.Options()
			rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: opts.Addrs, Username: user, Password: "pw", MaxRetries: -1})
			t.Cleanup(func() { _ = rc.Close() })
			return build(t, rc)
		},
	}
}

// sSubscribe subscribes to each channel with SSUBSCRIBE and forwards what
// arrives until the test ends, as the README tells a consumer to
// (testenv.SSubscribe: one subscription per channel, a reload of the slot
// map after a receive error).
func sSubscribe(t testing.TB, c *redis.ClusterClient, channels ...string) <-chan sinktest.Received {
	t.Helper()
	out := make(chan sinktest.Received, 10000)
	testenv.SSubscribe(t, c, func(channel, payload string) {
		out <- sinktest.Received{Channel: channel, Body: payload}
	}, channels...)
	return out
}

func TestClusterShardedConformance(t *testing.T) {
	t.Parallel()
	sinktest.Run(t, shardedHarness(t, false))
}

func TestClusterShardedMirrorConformance(t *testing.T) {
	t.Parallel()
	sinktest.Run(t, shardedHarness(t, true))
}

// With hash tags, a channel's stream is on the channel's own slot, so the
// shard that publishes a message also holds its stream.
func TestClusterMirrorStreamOnTheChannelSlot(t *testing.T) {
	t.Parallel()
	c := testenv.RedisCluster(t)
	s, err := sink.NewSharded(c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sink.NewMirror(s, c, sink.MirrorConfig{HashTag: true, MaxLen: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 8 {
		ch := testenv.UniqueName(fmt.Sprintf("slot:%d:", i))
		stream := m.Stream(ch)
		t.Cleanup(func() { _ = c.Del(context.Background(), stream).Err() })
		if res := m.Publish(ctx, []sink.Message{{Channel: ch, Body: []byte("x")}}); res[0].Err != nil || res[0].MirrorErr != nil {
			t.Fatalf("publish to %s: %+v", ch, res[0])
		}
		chSlot, err := c.ClusterKeySlot(ctx, ch).Result()
		if err != nil {
			t.Fatal(err)
		}
		streamSlot, err := c.ClusterKeySlot(ctx, stream).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n, err := c.XLen(ctx, stream).Result(); err != nil || n != 1 || chSlot != streamSlot {
			t.Errorf("channel %s (slot %d): stream %s has %d entries (%v), slot %d; want 1 entry on the channel's slot", ch, chSlot, stream, n, err, streamSlot)
		}
	}
}

// published is what the failover test keeps of one message.
type published struct {
	channel   string
	receivers int64
	done      bool
}

// TestClusterShardedFailover publishes 3,000 messages over 12 channels
// spread across the 3 shards, in batches of 50 through the sharded sink and
// its stream mirror, while a sharded subscriber (SSUBSCRIBE, from a client
// of its own, as a consumer) counts every message. After 1,000 messages the
// master of the first channel's shard is SIGKILLed; its replica takes over
// after the cluster's node timeout. The publishing loop does what the
// outbox worker does: a message whose result is Unavailable is published
// again later, after Ping (the breaker's probe) succeeds. It must hold:
// no message fails other than as Unavailable (a failover is an outage, not
// a per-row failure); every message published to a listening shard
// (receivers > 0) reaches the subscriber, and one published while the
// subscriber was re-subscribing to the new master (receivers 0) is in its
// channel's stream, on the same slot; and the subscriber, on its own,
// receives again from the promoted master. The figures are printed as a
// `cluster-redis:` line; the killed node is started again at the end and
// rejoins as a replica.
func TestClusterShardedFailover(t *testing.T) {
	c := testenv.RedisCluster(t)
	ctx := context.Background()
	s, err := sink.NewSharded(c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sink.NewMirror(s, c, sink.MirrorConfig{HashTag: true, MaxLen: 100000})
	if err != nil {
		t.Fatal(err)
	}

	// 12 channels, 4 on each master.
	masters := map[string][]string{} // master addr -> channels
	var channels []string
	for i := 0; len(channels) < 12 && i < 1000; i++ {
		ch := testenv.UniqueName(fmt.Sprintf("failover:%d:", i))
		addr := testenv.RedisSlotMaster(t, c, ch)
		if len(masters[addr]) < 4 {
			masters[addr] = append(masters[addr], ch)
			channels = append(channels, ch)
		}
	}
	if len(masters) != 3 || len(channels) != 12 {
		t.Fatalf("channels over %d masters: %v, want 4 on each of 3", len(masters), masters)
	}
	for _, ch := range channels {
		stream := m.Stream(ch)
		t.Cleanup(func() { _ = c.Del(context.Background(), stream).Err() })
	}
	victimAddr := testenv.RedisSlotMaster(t, c, channels[0])
	victimPID := testenv.RedisNodePID(t, c, victimAddr)

	consumer := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Options().Addrs, Username: c.Options().Username, Password: c.Options().Password})
	t.Cleanup(func() { _ = consumer.Close() })
	got := sSubscribe(t, consumer, channels...)
	var mu sync.Mutex
	received := map[string]int{}
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for r := range got {
			mu.Lock()
			received[r.Body]++
			mu.Unlock()
		}
	}()

	const total, batch, killAt = 3000, 50, 1000
	msgs := make(map[string]*published, total)
	var pending []string
	for i := range total {
		body := fmt.Sprintf("%s-%05d", channels[0], i)
		msgs[body] = &published{channel: channels[i%len(channels)]}
		pending = append(pending, body)
	}
	var killed, recovered time.Time
	var unavailable, perRow int
	var perRowErrs []string
	deadline := time.Now().Add(90 * time.Second)
	for sent := 0; len(pending) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages still unpublished 90s after the start", len(pending), total)
		}
		if killed.IsZero() && sent >= killAt {
			if err := syscall.Kill(victimPID, syscall.SIGKILL); err != nil {
				t.Fatalf("SIGKILL master %s (pid %d): %v (the cluster tests run as root, as scripts/services.sh up does)", victimAddr, victimPID, err)
			}
			killed = time.Now()
			t.Logf("SIGKILLed master %s (pid %d) after %d messages", victimAddr, victimPID, sent)
		}
		n := min(batch, len(pending))
		part := pending[:n]
		pending = pending[n:]
		var out []sink.Message
		for _, body := range part {
			out = append(out, sink.Message{Channel: msgs[body].channel, Body: []byte(body)})
		}
		res := m.Publish(ctx, out)
		failed := 0
		for i, r := range res {
			body := part[i]
			switch {
			case r.Err == nil:
				msgs[body].done = true
				msgs[body].receivers = r.Receivers
				sent++
				if !killed.IsZero() && recovered.IsZero() && msgs[body].channel == channels[0] {
					recovered = time.Now()
				}
			case r.Unavailable:
				unavailable++
				failed++
				pending = append(pending, body)
			default:
				perRow++
				perRowErrs = append(perRowErrs, r.Err.Error())
			}
		}
		if failed > 0 {
			// The worker's breaker: wait for the probe before going on.
			for Ping := time.Now(); s.Ping(ctx) != nil; {
				if time.Since(Ping) > 60*time.Second {
					t.Fatalf("the cluster's Ping did not succeed within 60s of a failed batch")
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	if killed.IsZero() {
		t.Fatal("the master was never killed")
	}

	// Every message published to a listening shard arrives.
	var zero []string
	waitUntil := time.Now().Add(30 * time.Second)
	for {
		missing := 0
		mu.Lock()
		for body, p := range msgs {
			if p.receivers > 0 && received[body] == 0 {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 || time.Now().After(waitUntil) {
			if missing > 0 {
				t.Errorf("%d messages published with receivers > 0 never reached the subscriber", missing)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // a second copy would arrive right behind the first
	mu.Lock()
	dups, distinct := 0, 0
	for body, p := range msgs {
		if n := received[body]; n > 0 {
			distinct++
			dups += n - 1
		} else if p.receivers == 0 {
			zero = append(zero, body)
		}
	}
	mu.Unlock()
	// The rest, published while nobody listened on the new master, are in
	// the channel's stream.
	inStream := map[string]bool{}
	for _, ch := range channels {
		entries, err := c.XRange(ctx, m.Stream(ch), "-", "+").Result()
		if err != nil {
			t.Fatalf("xrange %s: %v", m.Stream(ch), err)
		}
		for _, e := range entries {
			if b, ok := e.Values["message"].(string); ok {
				inStream[b] = true
			}
		}
	}
	lost := 0
	for _, body := range zero {
		if !inStream[body] {
			lost++
		}
	}
	// The subscriber comes back on the promoted master by itself: a probe
	// message on the failed shard's channel reaches it again.
	var back time.Duration
	for i := 0; back == 0; i++ {
		if time.Since(killed) > 60*time.Second {
			t.Errorf("the sharded subscriber did not receive on the promoted master within 60s of the kill")
			break
		}
		probe := fmt.Sprintf("probe-%d", i)
		res := m.Publish(ctx, []sink.Message{{Channel: channels[0], Body: []byte(probe)}})
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		if res[0].Err == nil && res[0].Receivers > 0 && received[probe] > 0 {
			back = time.Since(killed)
		}
		mu.Unlock()
	}
	if perRow > 0 {
		t.Errorf("%d per-message failures during the failover, want none (it is an outage): %v", perRow, perRowErrs[:min(3, len(perRowErrs))])
	}
	if lost > 0 {
		t.Errorf("%d of the %d messages that reached no subscriber are not in their stream either", lost, len(zero))
	}
	fmt.Printf("cluster-redis: messages=%d received=%d duplicates=%d no_receivers=%d in_stream_of_those=%d lost=%d unavailable_results=%d "+
		"per_message_failures=%d publishing_recovered=%s subscriber_back=%s\n",
		total, distinct, dups, len(zero), len(zero)-lost, lost, unavailable, perRow,
		recovered.Sub(killed).Round(time.Millisecond), back.Round(time.Millisecond))

	if err := testenv.ServicesUp(); err != nil {
		t.Fatal(err)
	}
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		t.Errorf("cluster after the restart: %v\n%s", err, info)
	}
}

// TestClusterShardedStalledShardSparesTheOthers publishes one batch over
// three channels, one on each master, while the first channel's master is
// stopped (SIGSTOP: it holds its connections and answers nothing, as a
// master in a long pause or behind a dead link does, for less than the
// cluster's node timeout, so no failover follows). The batch's deadline
// passes with that shard silent. Its messages must come back Unavailable
// (their rows are released, not failed) and the other two channels'
// messages published, each received once: a silent shard must not turn
// messages the healthy shards delivered into failures, which the worker
// would publish again.
func TestClusterShardedStalledShardSparesTheOthers(t *testing.T) {
	c := testenv.RedisCluster(t)
	s, err := sink.NewSharded(c)
	if err != nil {
		t.Fatal(err)
	}
	byMaster := map[string]bool{}
	var channels []string
	for i := 0; len(channels) < 3 && i < 1000; i++ {
		ch := testenv.UniqueName(fmt.Sprintf("stall:%d:", i))
		if addr := testenv.RedisSlotMaster(t, c, ch); !byMaster[addr] {
			byMaster[addr] = true
			channels = append(channels, ch)
		}
	}
	if len(channels) != 3 {
		t.Fatalf("channels on %d masters, want 3", len(channels))
	}
	stalled, healthy := channels[0], channels[1:]
	consumer := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Options().Addrs, Username: c.Options().Username, Password: c.Options().Password})
	t.Cleanup(func() { _ = consumer.Close() })
	got := sSubscribe(t, consumer, healthy...)
	// Every node's connection is open before the stop.
	if res := s.Publish(context.Background(), []sink.Message{{Channel: stalled, Body: []byte("warm")}}); res[0].Err != nil {
		t.Fatalf("warm-up publish: %v", res[0].Err)
	}

	const perChannel = 20
	var msgs []sink.Message
	for i := range perChannel {
		for _, ch := range channels {
			msgs = append(msgs, sink.Message{Channel: ch, Body: fmt.Appendf(nil, "%s-%02d", ch, i)})
		}
	}
	victim := testenv.RedisSlotMaster(t, c, stalled)
	pid := testenv.RedisNodePID(t, c, victim)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP master %s (pid %d): %v (the cluster tests run as root)", victim, pid, err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT master %s (pid %d): %v", victim, pid, err)
			}
		}
	}
	t.Cleanup(resume)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	res := s.Publish(ctx, msgs)
	cancel()
	resume()

	want := map[string]bool{}
	for i, m := range msgs {
		r := res[i]
		switch {
		case m.Channel == stalled && (r.Err == nil || !r.Unavailable):
			t.Errorf("%s on the stopped shard: err %v, unavailable %v; want an Unavailable error", m.Body, r.Err, r.Unavailable)
		case m.Channel != stalled && r.Err != nil:
			t.Errorf("%s on a healthy shard: %v (unavailable %v); want it published", m.Body, r.Err, r.Unavailable)
		case m.Channel != stalled && r.Receivers != 1:
			t.Errorf("%s on a healthy shard reached %d subscribers, want 1", m.Body, r.Receivers)
		case m.Channel != stalled:
			want[string(m.Body)] = true
		}
	}
	// A last message on each healthy channel: a channel delivers in order,
	// so once both have arrived any second copy would have too.
	var last []sink.Message
	for _, ch := range healthy {
		last = append(last, sink.Message{Channel: ch, Body: []byte(ch + "-last")})
	}
	for i, r := range s.Publish(context.Background(), last) {
		if r.Err != nil {
			t.Fatalf("publish %s after the stall: %v", last[i].Body, r.Err)
		}
	}
	received := map[string]int{}
	// Bounded by the test's own timeout (go test -timeout), not a window.
	for lasts := 0; lasts < len(healthy); {
		r := <-got
		if strings.HasSuffix(r.Body, "-last") {
			lasts++
			continue
		}
		received[r.Body]++
	}
	for body := range want {
		if received[body] != 1 {
			t.Errorf("%s received %d times, want once", body, received[body])
		}
	}
	if len(received) != len(want) {
		t.Errorf("received %d distinct messages, want %d", len(received), len(want))
	}
}
