// Package outboxtest sets up the publisher's integration tests against the
// real services: a migrated Postgres database of the test's own, rows
// inserted the way the classifier inserts them, a throwaway redis-server the
// test may stop and start, and a subscriber that records what arrived.
package outboxtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/postgres/postgrestest"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/migrations"
)

// Database creates a fresh database, applies the publisher's migrations and
// returns an open pool and its connection string.
func Database(t testing.TB) (*sql.DB, string) {
	t.Helper()
	return postgrestest.Migrated(t, migrations.FS)
}

// Row is one outbox row as the classifier writes it: the classifier's own
// outbox.Message, so a column added there is one a test can set here. A
// content id is unique only inside its index (migration 005); an empty
// IndexName means SourceName + "_classified_content".
type Row = outbox.Message

// Rows returns n article rows with content ids prefix-0 ... prefix-(n-1).
func Rows(prefix string, n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{
			ContentID: fmt.Sprintf("%s-%d", prefix, i), SourceName: "example_com", ContentType: "article",
			Topics: []string{"news"}, QualityScore: 70, Title: fmt.Sprintf("Title %d", i),
			Body: "body text", URL: fmt.Sprintf("https://example.com/%s/%d", prefix, i),
		}
	}
	return rows
}

// Insert writes rows as the classifier does: its statement
// (outbox.InsertBatch: INSERT ... ON CONFLICT DO NOTHING), then, once the
// rows are committed, the wake-up of the publishers (outbox.Wake).
func Insert(t testing.TB, db *sql.DB, rows []Row) {
	t.Helper()
	if err := InsertErr(context.Background(), db, rows); err != nil {
		t.Fatalf("insert outbox rows: %v", err)
	}
}

// InsertErr is Insert returning its error, for goroutines and benchmarks.
func InsertErr(ctx context.Context, db *sql.DB, rows []Row) error {
	msgs := make([]outbox.Message, len(rows))
	for i, r := range rows {
		if r.IndexName == "" {
			r.IndexName = r.SourceName + "_classified_content"
		}
		msgs[i] = r
	}
	if err := outbox.InsertBatch(ctx, db, msgs); err != nil {
		return err
	}
	return outbox.Wake(ctx, db)
}

// Counts returns the number of rows per status.
func Counts(t testing.TB, db *sql.DB) map[string]int {
	t.Helper()
	rows, err := db.Query(`SELECT status, COUNT(*) FROM classified_outbox GROUP BY status`)
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatalf("count: %v", err)
		}
		out[s] = n
	}
	return out
}

// WaitFor polls cond every 20ms until it holds, failing the test with what
// after timeout (testenv.WaitFor).
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, timeout, 20*time.Millisecond, what, cond)
}

// RedisServer is a redis-server process of the test's own, so that stopping
// it disturbs nobody. Its pub/sub output buffers are unlimited, so a slow
// subscriber under -race is never disconnected.
type RedisServer struct {
	t    testing.TB
	Port int
	Addr string
	dir  string
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartRedis starts a redis-server on a free loopback port, stopped when
// the test ends. args are extra redis-server options, such as
// "--requirepass", "secret".
func StartRedis(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Unavailable(t, "redis-server binary", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &RedisServer{t: t, Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: t.TempDir(), args: args}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Start (re)starts the server on its port and waits until it answers.
func (s *RedisServer) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	args := append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--client-output-buffer-limit", "pubsub 0 0 0"}, s.args...)
	cmd := exec.Command("redis-server", args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	answered := func() bool {
		err := c.Ping(context.Background()).Err()
		var reply redis.Error // NOAUTH from a server with --requirepass: it is up
		return err == nil || errors.As(err, &reply)
	}
	for !answered() {
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer", s.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server and waits for it to exit.
func (s *RedisServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Kill)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Client returns a client of the server, closed when the test ends.
func (s *RedisServer) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// ClientWithPassword returns a client that authenticates with password (for
// a server started with --requirepass), closed when the test ends.
func (s *RedisServer) ClientWithPassword(password string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: password, MaxRetries: -1, DialTimeout: time.Second})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// URL returns the server's redis:// URL.
func (s *RedisServer) URL() string { return "redis://" + s.Addr + "/0" }

// Subscriber records every message received on the publisher's channels,
// by content id. A content id is unique only within its index: Messages
// returns the messages of every index with that id, MessagesIn those of one.
type Subscriber struct {
	ps *redis.PubSub

	mu       sync.Mutex
	received map[string][]map[string]any
	times    map[string]time.Time
	contents map[[2]string]bool // (index, id) pairs received
	total    int
	done     chan struct{}
}

// Subscribe pattern-subscribes to articles:* and content:* and collects
// messages until the test ends.
func Subscribe(t testing.TB, c *redis.Client) *Subscriber {
	t.Helper()
	ctx := context.Background()
	ps := c.PSubscribe(ctx, "articles:*", "content:*")
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("psubscribe: %v", err)
	}
	s := &Subscriber{ps: ps, received: map[string][]map[string]any{}, times: map[string]time.Time{},
		contents: map[[2]string]bool{}, done: make(chan struct{})}
	ch := ps.Channel(redis.WithChannelSize(10000))
	go func() {
		defer close(s.done)
		for m := range ch {
			now := time.Now()
			var body map[string]any
			if err := json.Unmarshal([]byte(m.Payload), &body); err != nil {
				continue
			}
			body["_channel"] = m.Channel
			id, _ := body["id"].(string)
			index, _ := body["index"].(string)
			s.mu.Lock()
			s.received[id] = append(s.received[id], body)
			s.contents[[2]string{index, id}] = true
			if _, ok := s.times[id]; !ok {
				s.times[id] = now
			}
			s.total++
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = ps.Close(); <-s.done })
	return s
}

// Messages returns the messages received for a content id.
func (s *Subscriber) Messages(id string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.received[id]...)
}

// MessagesIn returns the messages received for a content id of one index.
func (s *Subscriber) MessagesIn(index, id string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, m := range s.received[id] {
		if m["index"] == index {
			out = append(out, m)
		}
	}
	return out
}

// ReceivedAt returns when the first message for id arrived.
func (s *Subscriber) ReceivedAt(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.times[id]
	return at, ok
}

// Distinct returns how many distinct contents (index, id) arrived, and how
// many messages in all.
func (s *Subscriber) Distinct() (contents, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.contents), s.total
}

// Counts returns the number of messages per content id.
func (s *Subscriber) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.received))
	for id, ms := range s.received {
		out[id] = len(ms)
	}
	return out
}
