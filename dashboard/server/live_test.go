package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	server "github.com/north-cloud/dashboard-server"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/redis/go-redis/v9"
)

// liveEvent is one server-sent event of GET /api/live.
type liveEvent struct {
	Name string
	Data map[string]any
}

// liveSetup starts a dashboard server whose live tail subscribes to the
// harness's Redis, with an index-manager that answers /api/v1/auth/me as
// the real one does with VIEWER_MESSAGE_BODIES=hide (viewers read no
// bodies). It returns the server, its handler and a Redis client to
// publish with.
func liveSetup(t *testing.T, edit func(*server.Config)) (*httptest.Server, *server.Server, *redis.Client) {
	t.Helper()
	rdb := testenv.Redis(t)
	authn, err := auth.New(testAuth)
	must(t, err)
	im := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, err := authn.Verify(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if r.URL.Path != "/api/v1/auth/me" || err != nil {
			http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"user": claims.Subject, "role": claims.Role, "reads_bodies": claims.Role != auth.RoleViewer})
	}))
	t.Cleanup(im.Close)
	cfg := server.Config{Dist: t.TempDir(), Auth: testAuth, IndexManagerURL: im.URL, RedisURL: testenv.Env(t, "REDIS_URL", "redis")}
	if edit != nil {
		edit(&cfg)
	}
	h, err := server.New(cfg, testenv.Logger(t))
	must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return srv, h, rdb
}

func roleToken(t *testing.T, role auth.Role) string {
	t.Helper()
	a, err := auth.New(testAuth)
	must(t, err)
	tok, _, err := a.Issue("u-"+string(role), role, time.Hour)
	must(t, err)
	return tok
}

// openLive opens GET /api/live; the response is returned unread. dial, if
// not nil, replaces the client's dialer.
func openLive(t *testing.T, url, tok string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/live", nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	tr := &http.Transport{DialContext: dial, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := (&http.Client{Transport: tr}).Do(req)
	must(t, err)
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// readEvents parses the stream's events into a channel until it ends.
func readEvents(res *http.Response) <-chan liveEvent {
	out := make(chan liveEvent, 1024)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		ev := liveEvent{}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Name != "" {
					out <- ev
				}
				ev = liveEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data)
			}
		}
	}()
	return out
}

// next returns the next event named name (skipping others, such as the
// messages other tests publish on the shared channels) that match keep.
func next(t *testing.T, events <-chan liveEvent, name string, keep func(liveEvent) bool) liveEvent {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended before a %q event", name)
			}
			if ev.Name == name && (keep == nil || keep(ev)) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %q event within 30s", name)
		}
	}
}

func withID(id string) func(liveEvent) bool {
	return func(ev liveEvent) bool { return ev.Data["id"] == id }
}

func publish(t *testing.T, rdb *redis.Client, channel, id, body string) {
	t.Helper()
	msg, _ := json.Marshal(map[string]any{
		"id": id, "source": "demo_news", "index": "demo_news_classified_content", "title": "Title " + id,
		"topics": []string{"violent_crime"}, "body": body, "published_date": "2026-11-26T05:00:00Z",
		"publisher": map[string]any{"published_at": "2026-11-26T06:00:01Z", "channel": channel},
	})
	must(t, rdb.Publish(context.Background(), channel, msg).Err())
}

// TestLiveTailStreamsPublishedMessages: a message published on a
// publisher channel reaches every open stream with its channel, id,
// title, source, topics and times; the body only to a caller the
// index-manager says reads bodies. Closing the server ends the streams.
func TestLiveTailStreamsPublishedMessages(t *testing.T) {
	t.Parallel()
	srv, h, rdb := liveSetup(t, nil)
	op := openLive(t, srv.URL, roleToken(t, auth.RoleOperator), nil)
	viewer := openLive(t, srv.URL, roleToken(t, auth.RoleViewer), nil)
	if op.StatusCode != http.StatusOK || op.Header.Get("Content-Type") != "text/event-stream" || viewer.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/live = %d %q / %d", op.StatusCode, op.Header.Get("Content-Type"), viewer.StatusCode)
	}
	opEvents, viewerEvents := readEvents(op), readEvents(viewer)
	if ready := next(t, opEvents, "ready", nil); ready.Data["reads_bodies"] != true {
		t.Errorf("operator's ready = %v, want reads_bodies true", ready.Data)
	}
	if ready := next(t, viewerEvents, "ready", nil); ready.Data["reads_bodies"] != false {
		t.Errorf("viewer's ready = %v, want reads_bodies false", ready.Data)
	}
	id := testenv.UniqueName("live")
	publish(t, rdb, "articles:crime:violent_crime", id, "the body text")
	got := next(t, opEvents, "message", withID(id))
	want := map[string]any{"channel": "articles:crime:violent_crime", "id": id, "title": "Title " + id, "source": "demo_news",
		"index": "demo_news_classified_content", "published_date": "2026-11-26T05:00:00Z", "published_at": "2026-11-26T06:00:01Z", "body": "the body text"}
	for k, v := range want {
		if got.Data[k] != v {
			t.Errorf("operator's message %s = %v, want %v", k, got.Data[k], v)
		}
	}
	if topics, _ := got.Data["topics"].([]any); len(topics) != 1 || topics[0] != "violent_crime" {
		t.Errorf("topics = %v", got.Data["topics"])
	}
	vgot := next(t, viewerEvents, "message", withID(id))
	if _, has := vgot.Data["body"]; has || vgot.Data["title"] != "Title "+id {
		t.Errorf("viewer's message = %v, want it without the body", vgot.Data)
	}
	// content:* is the other pattern.
	id2 := testenv.UniqueName("live")
	publish(t, rdb, "content:video", id2, "")
	if ev := next(t, opEvents, "message", withID(id2)); ev.Data["channel"] != "content:video" {
		t.Errorf("content:video message = %v", ev.Data)
	}
	h.Close()
	if end := next(t, opEvents, "end", nil); end.Data["reason"] != "server_stopping" {
		t.Errorf("end = %v", end.Data)
	}
}

// TestLiveTailSlowReaderDoesNotBlockOthers: a stream whose reader stops
// reading loses messages beyond its buffer and is told how many
// ("dropped"), while a stream beside it receives every message at once.
func TestLiveTailSlowReaderDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	srv, rdb, prefix, channel := slowLiveSetup(t, "slow", nil)
	tok := roleToken(t, auth.RoleOperator)
	fast := readEvents(openLive(t, srv.URL, tok, nil))
	next(t, fast, "ready", nil)
	slowRes, slowReader := openSlowLive(t, srv.URL, tok)
	// 200 messages of 64 KB (12.8 MB), each waited for on the fast stream
	// before the next is sent: the fast stream never falls behind, and
	// would stall if the slow one held the fan-out.
	body := strings.Repeat("x", 64<<10)
	const n = 200
	for i := range n {
		id := prefix + "-" + strconv.Itoa(i)
		publish(t, rdb, channel, id, body)
		next(t, fast, "message", withID(id))
	}
	slow := readEvents(&http.Response{Body: readCloser{slowReader, slowRes.Body}})
	dropped := next(t, slow, "dropped", nil)
	if d, _ := dropped.Data["dropped"].(float64); d <= 0 {
		t.Errorf("dropped event = %v, want a positive count", dropped.Data)
	}
}

// slowLiveSetup is liveSetup with a stream buffer of 4 and a channel of its
// own, named from name: every test and service of the run publishes on
// articles:*, and those messages would overflow the buffer too. It returns
// the server, a Redis client, the channel's unique prefix and the channel.
func slowLiveSetup(t *testing.T, name string, edit func(*server.Config)) (*httptest.Server, *redis.Client, string, string) {
	t.Helper()
	prefix := testenv.UniqueName(name)
	channel := "articles:" + prefix
	srv, _, rdb := liveSetup(t, func(c *server.Config) {
		c.LiveBuffer, c.LiveWriteTimeout, c.LiveChannels = 4, 5*time.Minute, []string{channel}
		if edit != nil {
			edit(c)
		}
	})
	return srv, rdb, prefix, channel
}

// openSlowLive opens a stream whose reader stops after its first line (the
// "ready" event, read here): the server's writes block once the socket's
// buffers are full. Its receive buffer is fixed at 256 KB (the kernel
// doubles it; a fixed size also stops the kernel's autotuning from growing
// it to net.ipv4.tcp_rmem's maximum, 32 MB here), and the server's send
// buffer is at most net.ipv4.tcp_wmem's, 4 MB.
func openSlowLive(t *testing.T, url, tok string) (*http.Response, *bufio.Reader) {
	t.Helper()
	fixed := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(256 << 10)
		}
		return c, err
	}
	res := openLive(t, url, tok, fixed)
	r := bufio.NewReader(res.Body)
	if line, err := r.ReadString('\n'); err != nil || line != "event: ready\n" {
		t.Fatalf("slow stream's first line = %q, %v", line, err)
	}
	return res, r
}

type readCloser struct {
	*bufio.Reader
	c interface{ Close() error }
}

func (r readCloser) Close() error { return r.c.Close() }

// TestLiveTailRefusals: no or a bad token 401, a role under
// DASHBOARD_LIVE_MIN_ROLE 403, a stream beyond DASHBOARD_LIVE_MAX_STREAMS
// 429 (and the slot is free again once a stream closes), other methods 405.
func TestLiveTailRefusals(t *testing.T) {
	t.Parallel()
	srv, _, _ := liveSetup(t, func(c *server.Config) { c.LiveMinRole = auth.RoleOperator; c.LiveMaxStreams = 1 })
	status := func(tok string) (int, string) {
		res := openLive(t, srv.URL, tok, nil)
		defer res.Body.Close()
		if res.StatusCode == http.StatusOK {
			return res.StatusCode, ""
		}
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.NewDecoder(res.Body).Decode(&e)
		return res.StatusCode, e.Error.Code + ": " + e.Error.Message
	}
	if s, msg := status(""); s != http.StatusUnauthorized {
		t.Errorf("no token = %d %s, want 401", s, msg)
	}
	if s, msg := status("not-a-token"); s != http.StatusUnauthorized {
		t.Errorf("bad token = %d %s, want 401", s, msg)
	}
	if s, msg := status(roleToken(t, auth.RoleViewer)); s != http.StatusForbidden || !strings.Contains(msg, "DASHBOARD_LIVE_MIN_ROLE") {
		t.Errorf("viewer under min role operator = %d %s, want 403 naming the setting", s, msg)
	}
	first := openLive(t, srv.URL, roleToken(t, auth.RoleOperator), nil)
	events := readEvents(first)
	next(t, events, "ready", nil)
	res := openLive(t, srv.URL, roleToken(t, auth.RoleAdmin), nil)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Errorf("second stream with a cap of 1 = %d (Retry-After %q), want 429", res.StatusCode, res.Header.Get("Retry-After"))
	}
	res.Body.Close()
	first.Body.Close()
	// The slot frees when the first stream's handler returns: wait for it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, _ := status(roleToken(t, auth.RoleAdmin))
		if s == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the first stream closed, a new one = %d, want 200", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/live", nil)
	req.Header.Set("Authorization", "Bearer "+roleToken(t, auth.RoleOperator))
	pr, err := http.DefaultClient.Do(req)
	must(t, err)
	pr.Body.Close()
	if pr.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/live = %d, want 405", pr.StatusCode)
	}
}

// TestLiveTailConfig: DASHBOARD_REDIS_URL and the live settings are read
// and checked; without Redis the route answers 503.
func TestLiveTailConfig(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string {
		return func(k string) string {
			if k == "JWT_SECRET" {
				return testSecret
			}
			return m[k]
		}
	}
	c, err := server.ConfigFromEnv(env(map[string]string{}))
	if err != nil || c.RedisURL != "" || c.LiveMaxStreams != server.LiveMaxStreamsDefault || c.LiveBuffer != server.LiveBufferDefault ||
		c.LiveMaxDuration != server.LiveMaxDurationDefault || c.LiveMinRole != auth.RoleViewer {
		t.Errorf("defaults = %+v, %v", c, err)
	}
	c, err = server.ConfigFromEnv(env(map[string]string{"DASHBOARD_REDIS_URL": "redis://127.0.0.1:6379/0", "DASHBOARD_LIVE_MAX_STREAMS": "3",
		"DASHBOARD_LIVE_BUFFER": "10", "DASHBOARD_LIVE_MAX_DURATION": "1m", "DASHBOARD_LIVE_HEARTBEAT": "5s", "DASHBOARD_LIVE_MIN_ROLE": "operator"}))
	if err != nil || c.RedisURL == "" || c.LiveMaxStreams != 3 || c.LiveBuffer != 10 || c.LiveMaxDuration != time.Minute ||
		c.LiveHeartbeat != 5*time.Second || c.LiveMinRole != auth.RoleOperator {
		t.Errorf("set = %+v, %v", c, err)
	}
	for k, v := range map[string]string{"DASHBOARD_REDIS_URL": "redis+cluster://127.0.0.1:7101", "DASHBOARD_LIVE_MIN_ROLE": "root", "DASHBOARD_LIVE_BUFFER": "-1"} {
		if _, err := server.ConfigFromEnv(env(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
	h, err := server.New(server.Config{Dist: t.TempDir(), Auth: testAuth}, testenv.Logger(t))
	must(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	res := openLive(t, srv.URL, roleToken(t, auth.RoleViewer), nil)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("without DASHBOARD_REDIS_URL = %d, want 503", res.StatusCode)
	}
}

// TestLiveTailHeartbeatAndMaxDuration: a quiet stream gets heartbeat
// comments, and ends with an "end" event (max_duration) after
// DASHBOARD_LIVE_MAX_DURATION, freeing its slot.
func TestLiveTailHeartbeatAndMaxDuration(t *testing.T) {
	t.Parallel()
	srv, _, _ := liveSetup(t, func(c *server.Config) {
		c.LiveHeartbeat = 50 * time.Millisecond
		c.LiveMaxDuration = 2 * time.Second
		c.LiveMaxStreams = 1
	})
	res := openLive(t, srv.URL, roleToken(t, auth.RoleViewer), nil)
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var heartbeat, end bool
	for sc.Scan() {
		line := sc.Text()
		heartbeat = heartbeat || line == ": heartbeat"
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"reason":"max_duration"`) {
			end = true
		}
	}
	if !heartbeat || !end {
		t.Errorf("stream ended with heartbeat %t, end max_duration %t", heartbeat, end)
	}
	// The slot is free again: a new stream opens (with a cap of one).
	deadline := time.Now().Add(30 * time.Second)
	for {
		again := openLive(t, srv.URL, roleToken(t, auth.RoleViewer), nil)
		again.Body.Close()
		if again.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after max duration, a new stream = %d", again.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
