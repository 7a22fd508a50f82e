package opstest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/testenv"
	"github.com/redis/go-redis/v9"
)

// redisUser connects to the native Redis as the user of the URL that
// `scripts/services.sh env` exports in name (deploy/redis/users.sh).
func redisUser(t *testing.T, name string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(testenv.Env(t, name, "redis"))
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	c := redis.NewClient(opts)
	pinged(t, name, c)
	return c
}

// pinged closes c when the test ends, and fails the test unless c's user
// may PING (name: the environment variable its URL came from).
func pinged(t *testing.T, name string, c redis.UniversalClient) {
	t.Helper()
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("%s: PING: %v", name, err)
	}
}

// awaitMessage waits on heard (who's subscription) for body on channel,
// the publisher's message, passing over anything else.
func awaitMessage(ctx context.Context, t *testing.T, who string, heard <-chan *redis.Message, channel, body string) {
	t.Helper()
	for {
		select {
		case m := <-heard:
			if m.Channel == channel && m.Payload == body {
				return
			}
		case <-ctx.Done():
			t.Fatalf("%s: the publisher's message on %s never arrived", who, channel)
		}
	}
}

// refused fails the test unless Redis refused the command for lack of
// permission (NOPERM: the command, a key or a channel outside the user's
// role). Only commands that change nothing are run this way: were the ACL
// wrong, they would run on the shared Redis of the tests.
func refused(t *testing.T, who string, c *redis.Client, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Do(ctx, args...).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("%s may run %v: %v", who, args, err)
	}
}

// wouldRefuse fails the test unless Redis would refuse the command to the
// user of c: ACL DRYRUN (as admin) checks the user's permissions without
// running anything, for the commands that would damage the shared Redis
// (FLUSHALL, CONFIG SET, SHUTDOWN, DEL, ...) were the ACL wrong.
func wouldRefuse(t *testing.T, admin, c *redis.Client, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	user := c.Options().Username
	if user == "" || user == "default" || user == "admin" {
		t.Fatalf("the role URL names user %q, not a role user", user)
	}
	res, err := admin.Do(ctx, append([]any{"ACL", "DRYRUN", user}, args...)...).Text()
	if err != nil || !strings.Contains(res, "no permissions") {
		t.Errorf("%s may run %v: ACL DRYRUN = %q, %v", user, args, res, err)
	}
}

// subscribed returns a subscription of c to the content channels, as the
// dashboard's live tail and the consumers make it, once Redis confirmed it.
func subscribed(t *testing.T, who string, c *redis.Client) <-chan *redis.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub := c.PSubscribe(ctx, "articles:*", "content:*")
	t.Cleanup(func() { _ = sub.Close() })
	for range 2 {
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatalf("%s: PSUBSCRIBE articles:* content:*: %v", who, err)
		}
	}
	return sub.Channel()
}

// The native Redis of scripts/services.sh runs with the ACL users of
// deploy/redis/users.sh, and `scripts/services.sh env` names a URL for each:
// the publisher publishes, appends to its mirror streams and probes, and is
// refused every other command (FLUSHALL, CONFIG, KEYS, DEL, ...); the
// dashboard and the subscriber receive what it publishes and may not publish;
// a connection without a user runs nothing. (The compose stack's users are
// the same file's, checked by scripts/compose-test.sh.)
func TestRedisUsersOfTheNativeRun(t *testing.T) {
	admin := testenv.Redis(t)
	pub := redisUser(t, "NC_REDIS_PUBLISHER_URL")
	dash := redisUser(t, "NC_REDIS_DASHBOARD_URL")
	sub := redisUser(t, "NC_REDIS_SUBSCRIBER_URL")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// No user: the default user is off.
	anon := redis.NewClient(&redis.Options{Addr: admin.Options().Addr})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Errorf("PING without a user: %v, want NOAUTH", err)
	}

	// The jobs: the publisher's PUBLISH (as its sink does, in a pipeline),
	// its mirror's XADD, its probe; both subscribers hear the message and
	// the subscriber reads the stream.
	channel := "articles:" + testenv.UniqueName("acl")
	stream := "stream:" + channel
	t.Cleanup(func() { admin.Del(context.Background(), stream) })
	heardByDash := subscribed(t, "dashboard", dash)
	heardBySub := subscribed(t, "subscriber", sub)
	body := `{"id":"` + channel + `"}`
	pipe := pub.Pipeline()
	published := pipe.Publish(ctx, channel, body)
	added := pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream, MaxLen: 10, Approx: true, Values: []any{"message", body}})
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("publisher: PUBLISH and XADD: %v (%v, %v)", err, published.Err(), added.Err())
	}
	if n := published.Val(); n < 2 {
		t.Errorf("publisher: PUBLISH reached %d subscribers, want the dashboard and the subscriber", n)
	}
	if err := pub.Publish(ctx, "publisher:probe", "").Err(); err != nil {
		t.Errorf("publisher: the probe PUBLISH: %v", err)
	}
	for who, heard := range map[string]<-chan *redis.Message{"dashboard": heardByDash, "subscriber": heardBySub} {
		awaitMessage(ctx, t, who, heard, channel, body)
	}
	entries, err := sub.XRange(ctx, stream, "-", "+").Result()
	if err != nil || len(entries) != 1 || entries[0].Values["message"] != body {
		t.Errorf("subscriber: XRANGE %s = %v, %v; want the published message", stream, entries, err)
	}

	// Nothing outside the roles: with the real credentials, the commands
	// that change nothing; through ACL DRYRUN, the ones that would.
	for _, args := range [][]any{
		{"CONFIG", "GET", "requirepass"}, {"KEYS", channel + "*"}, {"SCAN", "0", "MATCH", channel + "*"},
		{"XRANGE", stream, "-", "+"}, {"ACL", "LIST"}, {"PUBLISH", "other:" + channel, "x"}, {"INFO"},
	} {
		refused(t, "publisher", pub, args...)
	}
	for _, args := range [][]any{
		{"FLUSHALL"}, {"FLUSHDB"}, {"CONFIG", "SET", "maxmemory", "1"}, {"DEL", stream}, {"UNLINK", stream},
		{"SET", stream, "x"}, {"XTRIM", stream, "MAXLEN", "0"}, {"XADD", "other:" + channel, "*", "message", "x"},
		{"SHUTDOWN", "NOSAVE"}, {"ACL", "SETUSER", "publisher", "+@all"},
	} {
		wouldRefuse(t, admin, pub, args...)
	}
	for who, c := range map[string]*redis.Client{"dashboard": dash, "subscriber": sub} {
		for _, args := range [][]any{
			{"PUBLISH", channel, "x"}, {"SPUBLISH", channel, "x"}, {"CONFIG", "GET", "requirepass"},
			{"KEYS", channel + "*"}, {"ACL", "LIST"},
		} {
			refused(t, who, c, args...)
		}
		for _, args := range [][]any{{"XADD", stream, "*", "message", "x"}, {"DEL", stream}, {"FLUSHALL"}, {"SHUTDOWN", "NOSAVE"}} {
			wouldRefuse(t, admin, c, args...)
		}
	}
	refused(t, "dashboard", dash, "XRANGE", stream, "-", "+")
	// A subscription outside the content channels.
	other := dash.PSubscribe(ctx, "*")
	defer other.Close()
	if _, err := other.Receive(ctx); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("dashboard: PSUBSCRIBE * = %v, want NOPERM", err)
	}
}
