package opstest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/redisclient"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/redis/go-redis/v9"
)

// clusterUser connects to the Redis Cluster of scripts/services.sh
// (NC_REDIS_CLUSTER=1) as the user of the URL that `env` exports in name.
func clusterUser(t *testing.T, name string) *redis.ClusterClient {
	t.Helper()
	opts, err := redisclient.ParseCluster(testenv.Env(t, name, "redis cluster"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := redis.NewClusterClient(opts)
	pinged(t, name, c)
	return c
}

// The nodes of the Redis Cluster run with the same ACL users as the single
// Redis (deploy/redis/users.sh): through the cluster client each role does
// its job (the publisher's sharded SPUBLISH and its mirror's XADD on the
// channel's slot; the dashboard and the subscriber hear it by SSUBSCRIBE, and
// the subscriber reads the stream), and nothing else, on every master; a
// connection without a user runs nothing on any node. It runs in the
// cluster stage of scripts/test.sh (the name starts with TestCluster).
func TestClusterRedisUsers(t *testing.T) {
	admin := testenv.RedisCluster(t)
	pub := clusterUser(t, "NC_REDIS_PUBLISHER_URL")
	dash := clusterUser(t, "NC_REDIS_DASHBOARD_URL")
	sub := clusterUser(t, "NC_REDIS_SUBSCRIBER_URL")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// No user, on every node (ForEachShard calls on every node at once). A
	// replica that has just started (a node a test before this one killed
	// and started again) enters the slot map once it has synced: the six
	// nodes of scripts/services.sh are waited for.
	var nodes []string
	var mu sync.Mutex
	testenv.WaitFor(t, 30*time.Second, 200*time.Millisecond, "the cluster client to know the 6 nodes of scripts/services.sh", func() bool {
		admin.ReloadState(ctx)
		nodes = nodes[:0]
		err := admin.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			nodes = append(nodes, n.Options().Addr)
			return nil
		})
		return err == nil && len(nodes) >= 6
	})
	for _, addr := range nodes {
		anon := redis.NewClient(&redis.Options{Addr: addr})
		if err := anon.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
			t.Errorf("PING %s without a user: %v, want NOAUTH", addr, err)
		}
		_ = anon.Close()
	}

	// The jobs, as the publisher's sharded sink and its mirror do them.
	channel := "articles:" + testenv.UniqueName("acl")
	stream := "stream:{" + channel + "}"
	t.Cleanup(func() { admin.Del(context.Background(), stream) })
	heard := map[string]<-chan *redis.Message{}
	for who, c := range map[string]*redis.ClusterClient{"dashboard": dash, "subscriber": sub} {
		s := c.SSubscribe(ctx, channel)
		t.Cleanup(func() { _ = s.Close() })
		if _, err := s.Receive(ctx); err != nil {
			t.Fatalf("%s: SSUBSCRIBE %s: %v", who, channel, err)
		}
		heard[who] = s.Channel()
	}
	body := `{"id":"` + channel + `"}`
	if err := pub.SPublish(ctx, channel, body).Err(); err != nil {
		t.Fatalf("publisher: SPUBLISH %s: %v", channel, err)
	}
	if err := pub.XAdd(ctx, &redis.XAddArgs{Stream: stream, MaxLen: 10, Approx: true, Values: []any{"message", body}}).Err(); err != nil {
		t.Fatalf("publisher: XADD %s: %v", stream, err)
	}
	for who, ch := range heard {
		awaitMessage(ctx, t, who, ch, channel, body)
	}
	entries, err := sub.XRange(ctx, stream, "-", "+").Result()
	if err != nil || len(entries) != 1 || entries[0].Values["message"] != body {
		t.Errorf("subscriber: XRANGE %s = %v, %v; want the published message", stream, entries, err)
	}

	// Nothing outside the roles, on the node of the channel's slot: the
	// commands that change nothing with the real credentials, the others
	// through ACL DRYRUN on every master.
	for who, c := range map[string]*redis.ClusterClient{"publisher": pub, "dashboard": dash, "subscriber": sub} {
		for _, args := range [][]any{{"CONFIG", "GET", "requirepass"}, {"GET", stream}, {"ACL", "LIST"}, {"SPUBLISH", "other:" + channel, "x"}} {
			if err := c.Do(ctx, args...).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
				t.Errorf("%s may run %v: %v", who, args, err)
			}
		}
	}
	for _, who := range []string{"dashboard", "subscriber"} {
		if err := map[string]*redis.ClusterClient{"dashboard": dash, "subscriber": sub}[who].SPublish(ctx, channel, "x").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("%s may SPUBLISH %s: %v", who, channel, err)
		}
	}
	dryruns := map[string][][]any{
		"publisher":  {{"FLUSHALL"}, {"DEL", stream}, {"CONFIG", "SET", "maxmemory", "1"}, {"CLUSTER", "FAILOVER"}, {"CLUSTER", "RESET"}, {"SHUTDOWN", "NOSAVE"}},
		"dashboard":  {{"XADD", stream, "*", "message", "x"}, {"FLUSHALL"}, {"CLUSTER", "FORGET", "x"}},
		"subscriber": {{"XADD", stream, "*", "message", "x"}, {"DEL", stream}, {"CLUSTER", "FAILOVER"}},
	}
	if err := admin.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		for user, cmds := range dryruns {
			for _, args := range cmds {
				res, err := n.Do(ctx, append([]any{"ACL", "DRYRUN", user}, args...)...).Text()
				if err != nil || !strings.Contains(res, "no permissions") {
					t.Errorf("%s may run %v on %s: ACL DRYRUN = %q, %v", user, args, n.Options().Addr, res, err)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
