package sink_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/sink"
)

// Which Redis errors mean "Redis is unusable" (open the breaker, release
// the batch, spend no retry) and which concern one message. The replies are
// real: a private redis-server returns each one (a Lua error_reply for the
// states a test cannot easily put a server in), plus the real NOAUTH,
// WRONGPASS, NOPERM, max-clients and connection-refused errors.
func TestRedisUnavailableClassification(t *testing.T) {
	t.Parallel()
	rs := outboxtest.StartRedis(t, "--requirepass", "pw", "--maxclients", "3")
	ctx := context.Background()
	admin := rs.ClientWithPassword("pw")
	reply := func(msg string) error {
		t.Helper()
		err := admin.Eval(ctx, "return redis.error_reply(ARGV[1])", nil, msg).Err()
		if err == nil || err.Error() != msg {
			t.Fatalf("error reply %q: got %v", msg, err)
		}
		return err
	}
	cases := map[string]bool{
		"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.": true,
		"OOM command not allowed when used memory > 'maxmemory'.":                                          true,
		"LOADING Redis is loading the dataset in memory":                                                   true,
		"READONLY You can't write against a read only replica.":                                            true,
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.":                 true,
		"CLUSTERDOWN The cluster is down":                                                                  true,
		"TRYAGAIN Multiple keys request during rehashing of slot":                                          true,
		"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.":         true,
		"NOREPLICAS Not enough good replicas to write.":                                                    true,
		"ERR max number of clients reached":                                                                true,
		"NOPERM User default has no permissions to run the 'publish' command":                              true,
		"NOPERM this user has no permissions to access one of the channels used as arguments":              false,
		"NOPERM this user has no permissions to access one of the keys used as arguments":                  false,
		"BUSYGROUP Consumer Group name already exists":                                                     false,
		"WRONGTYPE Operation against a key holding the wrong kind of value":                                false,
		"ERR wrong number of arguments for 'publish' command":                                              false,
	}
	for msg, want := range cases {
		if got := sink.RedisUnavailable(reply(msg)); got != want {
			t.Errorf("%q: unusable %v, want %v", msg, got, want)
		}
	}

	real := map[string]*redis.Client{
		"NOAUTH (no password)": redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1}),
		"WRONGPASS":            redis.NewClient(&redis.Options{Addr: rs.Addr, Password: "wrong", MaxRetries: -1}),
		"connection refused":   redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second}),
	}
	for name, c := range real {
		err := c.Publish(ctx, "articles:news", "x").Err()
		_ = c.Close()
		if err == nil || !sink.RedisUnavailable(err) {
			t.Errorf("%s: %v is not classified unusable", name, err)
		}
	}
	// NOPERM for the command, from the server itself.
	if err := admin.Do(ctx, "ACL", "SETUSER", "limited", "on", ">pw2", "+@all", "-publish", "allchannels", "allkeys").Err(); err != nil {
		t.Fatal(err)
	}
	limited := redis.NewClient(&redis.Options{Addr: rs.Addr, Username: "limited", Password: "pw2", MaxRetries: -1})
	defer limited.Close()
	if err := limited.Publish(ctx, "articles:news", "x").Err(); err == nil || !sink.RedisUnavailable(err) {
		t.Errorf("NOPERM for PUBLISH: %v is not classified unusable", err)
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "limited", "+publish", "resetchannels", "&articles:*").Err(); err != nil {
		t.Fatal(err)
	}
	if err := limited.Publish(ctx, "content:video", "x").Err(); err == nil || sink.RedisUnavailable(err) {
		t.Errorf("NOPERM for a channel: %v is classified unusable, want per message", err)
	}
	// Every connection slot taken: the next client is refused.
	var hold []*redis.Client
	defer func() {
		for _, c := range hold {
			_ = c.Close()
		}
	}()
	for range 3 {
		c := redis.NewClient(&redis.Options{Addr: rs.Addr, Password: "pw", PoolSize: 1, MaxRetries: -1})
		hold = append(hold, c)
		_ = c.Ping(ctx).Err()
	}
	extra := redis.NewClient(&redis.Options{Addr: rs.Addr, Password: "pw", MaxRetries: -1})
	defer extra.Close()
	if err := extra.Publish(ctx, "articles:news", "x").Err(); err == nil || !sink.RedisUnavailable(err) {
		t.Errorf("max clients: %v is not classified unusable", err)
	}
}
