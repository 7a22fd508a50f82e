package httpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/testenv"
)

// records decodes the JSON log lines written to logs so far.
func records(t *testing.T, logs *testenv.SyncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, line)
		}
		out = append(out, rec)
	}
	return out
}

type bundle struct {
	server *httpserver.Server
	logs   *testenv.SyncBuffer
	base   string
}

// setup starts a server on a free port; configure adds routes before Start.
func setup(t *testing.T, cfg httpserver.Config, configure func(r *gin.Engine), checks ...httpserver.ReadyCheck) bundle {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.ServiceName == "" {
		cfg.ServiceName = "testsvc"
	}
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "test_metric 1\n") })
	s, err := httpserver.New(cfg, logger, metrics, checks...)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	if configure != nil {
		configure(s.Router())
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	// Tests that care about Stop's result call it themselves; Stop is
	// idempotent, so this only makes sure the server goroutine ends.
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return bundle{server: s, logs: logs, base: "http://" + s.Addr()}
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, body
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, body)
	}
	return m
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	e, _ := decode(t, body)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, httpserver.Config{ServiceName: "classifier"}, nil)

	resp, body := get(t, b.base+"/health")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health status = %d", resp.StatusCode)
	}
	if got := decode(t, body); got["status"] != "ok" || got["service"] != "classifier" {
		t.Errorf("/health body = %s", body)
	}
	resp, body = get(t, b.base+"/metrics")
	if resp.StatusCode != http.StatusOK || string(body) != "test_metric 1\n" {
		t.Errorf("/metrics = %d %q", resp.StatusCode, body)
	}
	resp, body = get(t, b.base+"/nope")
	if resp.StatusCode != http.StatusNotFound || errorCode(t, body) != "not_found" {
		t.Errorf("unknown route = %d %s", resp.StatusCode, body)
	}
}

func TestReady(t *testing.T) {
	t.Parallel()
	ok := func(context.Context) error { return nil }
	// The hanging check ignores its deadline and answers only when the test
	// is over: /ready answering at all proves it stopped waiting for it at
	// ReadyTimeout, with no measure of the time a loaded machine stretches.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name        string
		checks      []httpserver.ReadyCheck
		timeout     time.Duration // ReadyTimeout; 10s (never reached) when zero
		wantStatus  int
		wantFailing []any
		wantChecks  map[string]any
	}{
		{
			name:       "no checks",
			wantStatus: http.StatusOK,
			wantChecks: map[string]any{},
		},
		{
			name:       "all ok",
			checks:     []httpserver.ReadyCheck{{Name: "postgres", Check: ok}, {Name: "elasticsearch", Check: ok}},
			wantStatus: http.StatusOK,
			wantChecks: map[string]any{"postgres": "ok", "elasticsearch": "ok"},
		},
		{
			name: "one failing",
			checks: []httpserver.ReadyCheck{
				{Name: "postgres", Check: ok},
				{Name: "elasticsearch", Check: func(context.Context) error { return errors.New("connection refused") }},
			},
			wantStatus:  http.StatusServiceUnavailable,
			wantFailing: []any{"elasticsearch"},
			wantChecks:  map[string]any{"postgres": "ok", "elasticsearch": "failing"},
		},
		{
			name: "advisory failure degrades but stays ready",
			checks: []httpserver.ReadyCheck{
				{Name: "postgres", Check: ok},
				{Name: "raw_indices", Advisory: true, Check: func(context.Context) error { return errors.New("1 raw index skipped: x_raw_content (mapping)") }},
			},
			wantStatus: http.StatusOK,
			wantChecks: map[string]any{"postgres": "ok", "raw_indices": "degraded"},
		},
		{
			name: "hanging check times out",
			checks: []httpserver.ReadyCheck{
				{Name: "redis", Check: func(ctx context.Context) error { <-ctx.Done(); <-release; return ctx.Err() }},
				{Name: "postgres", Check: func(context.Context) error { return errors.New("down") }},
			},
			timeout:     time.Second,
			wantStatus:  http.StatusServiceUnavailable,
			wantFailing: []any{"postgres", "redis"},
			wantChecks:  map[string]any{"postgres": "failing", "redis": "no answer within 1s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 10 * time.Second
			}
			b := setup(t, httpserver.Config{ReadyTimeout: timeout}, nil, tt.checks...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/ready", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, body := do(t, req) // a /ready that waited for the hanging check fails here after a minute
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			got := decode(t, body)
			wantState := "ready"
			if tt.wantFailing != nil {
				wantState = "not_ready"
				if !equalJSON(got["failing"], tt.wantFailing) {
					t.Errorf("failing = %v, want %v", got["failing"], tt.wantFailing)
				}
			}
			if got["status"] != wantState {
				t.Errorf("status field = %v, want %s", got["status"], wantState)
			}
			if !equalJSON(got["checks"], tt.wantChecks) {
				t.Errorf("checks = %v, want %v", got["checks"], tt.wantChecks)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var readErr error
	b := setup(t, httpserver.Config{MaxBodyBytes: 16}, func(r *gin.Engine) {
		r.POST("/echo", func(c *gin.Context) {
			data, err := io.ReadAll(c.Request.Body)
			mu.Lock()
			readErr = err
			mu.Unlock()
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				httpserver.WriteError(c, http.StatusRequestEntityTooLarge, "body_too_large", "request body is too large")
				return
			}
			c.String(http.StatusOK, "%d", len(data))
		})
	})
	tests := []struct {
		name       string
		body       io.Reader
		wantStatus int
		wantBody   string
	}{
		{"under limit", strings.NewReader("0123456789abcdef"), http.StatusOK, "16"},
		{"declared too large", strings.NewReader("0123456789abcdefX"), http.StatusRequestEntityTooLarge, ""},
		// io.MultiReader hides the length, so the body is sent chunked.
		{"chunked too large", io.MultiReader(strings.NewReader(strings.Repeat("x", 64))), http.StatusRequestEntityTooLarge, ""},
	}
	for _, tt := range tests { // sequential: they share readErr
		req, err := http.NewRequest(http.MethodPost, b.base+"/echo", tt.body)
		if err != nil {
			t.Fatal(err)
		}
		resp, body := do(t, req)
		if resp.StatusCode != tt.wantStatus {
			t.Errorf("%s: status = %d, want %d: %s", tt.name, resp.StatusCode, tt.wantStatus, body)
			continue
		}
		if tt.wantStatus == http.StatusRequestEntityTooLarge && errorCode(t, body) != "body_too_large" {
			t.Errorf("%s: body = %s", tt.name, body)
		}
		if tt.wantBody != "" && string(body) != tt.wantBody {
			t.Errorf("%s: body = %q, want %q", tt.name, body, tt.wantBody)
		}
		if tt.name == "chunked too large" {
			mu.Lock()
			var tooLarge *http.MaxBytesError
			if !errors.As(readErr, &tooLarge) {
				t.Errorf("handler read error = %v, want *http.MaxBytesError", readErr)
			}
			mu.Unlock()
		}
	}
}

func TestDeclaredTooLargeBodyNeverReachesHandler(t *testing.T) {
	t.Parallel()
	var called atomic.Bool
	b := setup(t, httpserver.Config{MaxBodyBytes: 4}, func(r *gin.Engine) {
		r.POST("/x", func(c *gin.Context) { called.Store(true) })
	})
	req, _ := http.NewRequest(http.MethodPost, b.base+"/x", strings.NewReader("too long"))
	resp, _ := do(t, req)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || called.Load() {
		t.Fatalf("status = %d, handler called = %v", resp.StatusCode, called.Load())
	}
}

func TestPanicIsRecovered(t *testing.T) {
	t.Parallel()
	b := setup(t, httpserver.Config{}, func(r *gin.Engine) {
		r.GET("/boom", func(*gin.Context) { panic("secret-panic-value") })
	})
	req, _ := http.NewRequest(http.MethodGet, b.base+"/boom", nil)
	req.Header.Set(httpserver.RequestIDHeader, "boom-1")
	resp, body := do(t, req)
	if resp.StatusCode != http.StatusInternalServerError || errorCode(t, body) != "internal_error" {
		t.Fatalf("panic answered %d %s", resp.StatusCode, body)
	}
	if strings.Contains(string(body), "secret-panic-value") {
		t.Errorf("response leaks the panic value: %s", body)
	}
	if resp, _ := get(t, b.base+"/health"); resp.StatusCode != http.StatusOK {
		t.Errorf("after panic /health = %d", resp.StatusCode)
	}
	var found bool
	for _, rec := range records(t, b.logs) {
		if rec["msg"] == "panic in http handler" {
			found = true
			if rec["panic"] != "secret-panic-value" || rec["request_id"] != "boom-1" || !strings.Contains(rec["stack"].(string), "goroutine") {
				t.Errorf("panic log = %v", rec)
			}
		}
	}
	if !found {
		t.Errorf("panic not logged:\n%s", b.logs.String())
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t, httpserver.Config{}, func(r *gin.Engine) {
		r.GET("/id", func(c *gin.Context) {
			c.String(http.StatusOK, httpserver.RequestID(c.Request.Context())+"|"+httpserver.RequestID(c))
		})
	})
	tests := []struct {
		name     string
		incoming string
		wantSame bool
	}{
		{"honoured", "req-42.abc", true},
		{"generated when absent", "", false},
		{"too long replaced", strings.Repeat("a", 129), false},
		{"max length kept", strings.Repeat("a", 128), true},
		{"space replaced", "a b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(http.MethodGet, b.base+"/id", nil)
			if tt.incoming != "" {
				req.Header.Set(httpserver.RequestIDHeader, tt.incoming)
			}
			resp, body := do(t, req)
			id := resp.Header.Get(httpserver.RequestIDHeader)
			if string(body) != id+"|"+id {
				t.Errorf("handler saw %q, header %q", body, id)
			}
			if tt.wantSame {
				if id != tt.incoming {
					t.Errorf("id = %q, want incoming %q", id, tt.incoming)
				}
				return
			}
			if _, err := uuid.Parse(id); err != nil {
				t.Errorf("generated id %q is not a uuid: %v", id, err)
			}
		})
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	b := setup(t, httpserver.Config{}, func(r *gin.Engine) {
		r.GET("/items/:id", func(c *gin.Context) { c.String(http.StatusTeapot, "hello") })
	})
	req, _ := http.NewRequest(http.MethodGet, b.base+"/items/doc-123", nil)
	req.Header.Set(httpserver.RequestIDHeader, "log-1")
	do(t, req)
	get(t, b.base+"/health") // debug level: below the test logger's info level

	var lines []map[string]any
	for _, rec := range records(t, b.logs) {
		if rec["msg"] == "http request" {
			lines = append(lines, rec)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("want exactly one access log line (health is debug), got %v", lines)
	}
	rec := lines[0]
	want := map[string]any{
		"method": "GET", "path": "/items/:id", "status": float64(http.StatusTeapot),
		"bytes": float64(5), "request_id": "log-1", "client_ip": "127.0.0.1", "component": "http_server",
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v", k, rec[k], v)
		}
	}
	if _, ok := rec["duration_ms"].(float64); !ok {
		t.Errorf("duration_ms missing: %v", rec)
	}
}

func TestStopDrainsInFlightRequest(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	b := setup(t, httpserver.Config{}, func(r *gin.Engine) {
		r.GET("/slow", func(c *gin.Context) {
			close(entered)
			time.Sleep(300 * time.Millisecond)
			c.String(http.StatusOK, "done")
		})
	})

	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Get(b.base + "/slow")
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		done <- result{status: resp.StatusCode, body: string(body), err: err}
	}()
	<-entered

	start := time.Now()
	if err := b.server.Stop(context.Background()); err != nil {
		t.Fatalf("Stop() error = %v", err)
	}
	if elapsed := time.Since(start); elapsed < 200*time.Millisecond {
		t.Errorf("Stop returned after %s, before the in-flight request finished", elapsed)
	}
	r := <-done
	if r.err != nil || r.status != http.StatusOK || r.body != "done" {
		t.Fatalf("in-flight request = %+v", r)
	}
	if _, err := http.Get(b.base + "/health"); err == nil {
		t.Error("server still accepts requests after Stop")
	}
}

func TestStopIsBoundedByContext(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b := setup(t, httpserver.Config{}, func(r *gin.Engine) {
		r.GET("/stuck", func(c *gin.Context) {
			close(entered)
			<-release
		})
	})
	go func() {
		if resp, err := http.Get(b.base + "/stuck"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	// The handler stays stuck until the test is over: Stop returning at all
	// proves it gave up at its deadline (a Stop that waited for the handler
	// fails after a minute), however long a loaded machine takes.
	stopped := make(chan error, 1)
	go func() { stopped <- b.server.Stop(ctx) }()
	var err error
	select {
	case err = <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Stop waited for the stuck handler past its 100ms deadline")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop() error = %v, want deadline exceeded", err)
	}
	if err2 := b.server.Stop(context.Background()); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("second Stop() = %v, want the first result %v", err2, err)
	}
}

func TestLifecycleEdges(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	newServer := func(addr string) *httpserver.Server {
		s, err := httpserver.New(httpserver.Config{Addr: addr, ServiceName: "svc"}, logger, http.NotFoundHandler())
		if err != nil {
			t.Fatalf("New() error = %v", err)
		}
		return s
	}

	s := newServer("127.0.0.1:0")
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("Stop before Start = %v", err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Error("Start after Stop succeeded")
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if err := newServer(busy.Addr().String()).Start(context.Background()); err == nil {
		t.Error("Start on a used port returned nil")
	}

	s = newServer("127.0.0.1:0")
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if err := s.Start(context.Background()); err != nil || s.Addr() != addr {
		t.Errorf("second Start = %v, addr %s -> %s", err, addr, s.Addr())
	}
	if strings.HasSuffix(addr, ":0") {
		t.Errorf("Addr() = %s, want the real port", addr)
	}
	for range 2 {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop() = %v", err)
		}
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	ok := func(context.Context) error { return nil }
	valid := httpserver.Config{Addr: ":0", ServiceName: "svc"}
	tests := []struct {
		name    string
		cfg     httpserver.Config
		logger  *slog.Logger
		metrics http.Handler
		checks  []httpserver.ReadyCheck
		want    string
	}{
		{"bad addr", httpserver.Config{Addr: "8071", ServiceName: "svc"}, logger, http.NotFoundHandler(), nil, "Addr must be host:port"},
		{"no service", httpserver.Config{Addr: ":0"}, logger, http.NotFoundHandler(), nil, "ServiceName is required"},
		{"negative body", httpserver.Config{Addr: ":0", ServiceName: "s", MaxBodyBytes: -1}, logger, http.NotFoundHandler(), nil, "MaxBodyBytes"},
		{"no logger", valid, nil, http.NotFoundHandler(), nil, "logger is required"},
		{"no metrics", valid, logger, nil, nil, "metrics handler is required"},
		{"duplicate check", valid, logger, http.NotFoundHandler(), []httpserver.ReadyCheck{{Name: "db", Check: ok}, {Name: "db", Check: ok}}, `ready check "db"`},
		{"nil check", valid, logger, http.NotFoundHandler(), []httpserver.ReadyCheck{{Name: "db"}}, `ready check "db"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := httpserver.New(tt.cfg, tt.logger, tt.metrics, tt.checks...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() error = %v, want containing %q", err, tt.want)
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    httpserver.Config
		wantErr string
	}{
		{
			name: "defaults",
			want: httpserver.Config{Addr: ":8071", ServiceName: "classifier", MaxBodyBytes: 1 << 20,
				ShutdownTimeout: 20 * time.Second, ReadHeaderTimeout: 10 * time.Second, ReadyTimeout: 2 * time.Second,
				ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute},
		},
		{
			name: "set",
			env:  map[string]string{"CLASSIFIER_HTTP_ADDR": "127.0.0.1:9000", "HTTP_MAX_BODY_BYTES": "2048", "HTTP_SHUTDOWN_TIMEOUT": "5s"},
			want: httpserver.Config{Addr: "127.0.0.1:9000", ServiceName: "classifier", MaxBodyBytes: 2048,
				ShutdownTimeout: 5 * time.Second, ReadHeaderTimeout: 10 * time.Second, ReadyTimeout: 2 * time.Second,
				ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute},
		},
		{
			name: "invalid",
			env:  map[string]string{"CLASSIFIER_HTTP_ADDR": "8071", "HTTP_MAX_BODY_BYTES": "0", "HTTP_SHUTDOWN_TIMEOUT": "20"},
			want: httpserver.Config{Addr: "8071", ServiceName: "classifier", MaxBodyBytes: 1 << 20,
				ShutdownTimeout: 20 * time.Second, ReadHeaderTimeout: 10 * time.Second, ReadyTimeout: 2 * time.Second,
				ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute},
			wantErr: `invalid configuration: CLASSIFIER_HTTP_ADDR: must be host:port or :port (got "8071"); ` +
				`HTTP_MAX_BODY_BYTES: must be a positive integer (got "0"); HTTP_SHUTDOWN_TIMEOUT: must be a positive duration such as "30s" (got "20")`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := config.NewFromMap(tt.env)
			if got := httpserver.ConfigFromEnv(l, "classifier", "CLASSIFIER_HTTP_ADDR", ":8071"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ConfigFromEnv = %+v, want %+v", got, tt.want)
			}
			err := l.Err()
			if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
				t.Errorf("Err() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
	httpserver.WriteError(c, http.StatusConflict, "duplicate", "already exists")
	if rec.Code != http.StatusConflict || !c.IsAborted() {
		t.Fatalf("status = %d, aborted = %v", rec.Code, c.IsAborted())
	}
	if got, want := strings.TrimSpace(rec.Body.String()), `{"error":{"code":"duplicate","message":"already exists"}}`; got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
}
