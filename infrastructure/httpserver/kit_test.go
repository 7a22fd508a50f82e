package httpserver_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/httpserver"
)

type decodeTarget struct {
	Source string `json:"source"`
	All    bool   `json:"all"`
}

// Every body that is not exactly one JSON object of the expected shape is
// refused with 400 (413 past the limit), and the handler never runs.
func TestDecodeJSONStrict(t *testing.T) {
	t.Parallel()
	b := setup(t, httpserver.Config{MaxBodyBytes: 64}, func(r *gin.Engine) {
		r.POST("/strict", func(c *gin.Context) {
			var v decodeTarget
			if httpserver.DecodeJSON(c, &v) {
				c.JSON(http.StatusOK, v)
			}
		})
		r.POST("/lenient", func(c *gin.Context) {
			var v decodeTarget
			if httpserver.DecodeJSONWith(c, &v, httpserver.JSONOptions{AllowUnknownFields: true}) {
				c.JSON(http.StatusOK, v)
			}
		})
	})
	tests := []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"object", "/strict", `{"source":"a"}`, 200, ""},
		{"white space after", "/strict", "{\"all\":true} \n", 200, ""},
		{"empty", "/strict", ``, 400, "invalid_json"},
		{"null", "/strict", `null`, 400, "invalid_json"},
		{"null with spaces", "/strict", " null ", 400, "invalid_json"},
		{"array", "/strict", `[]`, 400, "invalid_json"},
		{"string", "/strict", `"x"`, 400, "invalid_json"},
		{"trailing object", "/strict", `{"source":"a"}{"all":true}`, 400, "invalid_json"},
		{"trailing garbage", "/strict", `{"source":"a"} x`, 400, "invalid_json"},
		{"unknown field", "/strict", `{"sourc":"a"}`, 400, "invalid_json"},
		{"wrong type", "/strict", `{"all":"yes"}`, 400, "invalid_json"},
		{"syntax", "/strict", `{"source":`, 400, "invalid_json"},
		{"null field", "/strict", `{"source":null}`, 400, "invalid_json"},
		{"null nested", "/strict", `{"all":true,"source":"a","x":[null]}`, 400, "invalid_json"},
		{"the word null in a string", "/strict", `{"source":"null"}`, 200, ""},
		{"NUL in value", "/strict", `{"source":"\u0000"}`, 400, "invalid_text"},
		{"NUL in key", "/strict", `{"a\u0000":1}`, 400, "invalid_text"},
		{"invalid UTF-8", "/strict", "{\"source\":\"\xff\"}", 400, "invalid_text"},
		{"too large", "/strict", `{"source":"` + strings.Repeat("a", 100) + `"}`, 413, "body_too_large"},
		{"unknown field allowed", "/lenient", `{"other":1,"source":"a"}`, 200, ""},
		{"lenient still refuses null", "/lenient", `null`, 400, "invalid_json"},
		{"lenient still refuses trailing data", "/lenient", `{} {}`, 400, "invalid_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+tt.path, strings.NewReader(tt.body))
			resp, body := do(t, req)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.code != "" {
				e := decode(t, body)["error"].(map[string]any)
				if e["code"] != tt.code || e["message"] == "" {
					t.Errorf("error = %v, want code %s with a message", e, tt.code)
				}
			}
		})
	}
}

// A NUL or invalid UTF-8 in the path or a query parameter is refused by
// every server before any handler runs.
func TestTextParametersRefused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	reached := 0
	b := setup(t, httpserver.Config{}, func(r *gin.Engine) {
		h := func(c *gin.Context) {
			mu.Lock()
			reached++
			mu.Unlock()
			c.Status(http.StatusNoContent)
		}
		r.GET("/items", h)
		r.GET("/items/:name", h)
	})
	for _, path := range []string{"/items?topic=%00", "/items?to%00pic=x", "/items?q=%ff", "/items/%00", "/items/a%ffb", "/items?q=%zz"} {
		resp, body := get(t, b.base+path)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s = %d, want 400: %s", path, resp.StatusCode, body)
			continue
		}
		if e := decode(t, body)["error"].(map[string]any); e["code"] != "invalid_text" {
			t.Errorf("GET %s: code %v, want invalid_text", path, e["code"])
		}
	}
	for _, path := range []string{"/items?topic=crime", "/items/caf%C3%A9"} {
		if resp, body := get(t, b.base+path); resp.StatusCode != http.StatusNoContent {
			t.Errorf("GET %s = %d, want 204: %s", path, resp.StatusCode, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if reached != 2 {
		t.Errorf("handlers ran %d times, want 2 (only the valid requests)", reached)
	}
}

func TestCursorRoundTripAndRefusals(t *testing.T) {
	t.Parallel()
	k := httpserver.Keyset{CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), ID: "0b6f5c1e-1111-4a4a-8b8b-0123456789ab"}
	got, err := httpserver.DecodeCursor(httpserver.EncodeCursor(k))
	if err != nil || !got.CreatedAt.Equal(k.CreatedAt) || got.ID != k.ID {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, k)
	}
	for _, bad := range []string{"", "x", "!!!", "bm90IGEgY3Vyc29y", strings.Repeat("A", 300),
		httpserver.EncodeCursor(httpserver.Keyset{CreatedAt: k.CreatedAt, ID: "not-a-uuid"})} {
		_, err := httpserver.DecodeCursor(bad)
		var re *httpserver.RequestError
		if !errors.As(err, &re) || re.Status != http.StatusBadRequest || re.Code != httpserver.CodeInvalidCursor {
			t.Errorf("DecodeCursor(%q) = %v, want a 400 invalid_cursor", bad, err)
		}
	}
}

// One request over the concurrency limit is refused with 429 and
// Retry-After while the others run; a smaller route body limit gives 413.
func TestLimitConcurrencyAndBody(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	b := setup(t, httpserver.Config{}, func(r *gin.Engine) {
		r.POST("/costly", httpserver.LimitConcurrency(2, 3), func(c *gin.Context) {
			entered <- struct{}{}
			<-release
			c.Status(http.StatusNoContent)
		})
		r.POST("/small", httpserver.LimitBody(10), func(c *gin.Context) {
			var v map[string]any
			if httpserver.DecodeJSONWith(c, &v, httpserver.JSONOptions{AllowUnknownFields: true}) {
				c.Status(http.StatusNoContent)
			}
		})
	})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, b.base+"/costly", nil)
			if resp, _ := do(t, req); resp.StatusCode != http.StatusNoContent {
				t.Errorf("admitted request = %d", resp.StatusCode)
			}
		})
	}
	<-entered
	<-entered
	req, _ := http.NewRequest(http.MethodPost, b.base+"/costly", nil)
	resp, body := do(t, req)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("third request = %d (Retry-After %q), want 429 with Retry-After 3: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	close(release)
	wg.Wait()
	req, _ = http.NewRequest(http.MethodPost, b.base+"/small", strings.NewReader(`{"a":"0123456789"}`))
	if resp, body := do(t, req); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("large body = %d, want 413: %s", resp.StatusCode, body)
	}
}

// /ready tells the error text of a failing check only to callers
// ReadyDetails allows.
func TestReadyDetailsOnlyForAllowedCallers(t *testing.T) {
	t.Parallel()
	cfg := httpserver.Config{ReadyDetails: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer ok" }}
	b := setup(t, cfg, nil,
		httpserver.ReadyCheck{Name: "postgres", Check: func(context.Context) error {
			return errors.New(`dial tcp 10.0.0.7:5432: password authentication failed for user "classifier"`)
		}},
		httpserver.ReadyCheck{Name: "raw_indices", Advisory: true, Check: func(context.Context) error { return errors.New("x_raw_content skipped") }})
	resp, body := get(t, b.base+"/ready")
	if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(body), "10.0.0.7") ||
		strings.Contains(string(body), "classifier") || strings.Contains(string(body), "x_raw_content") {
		t.Errorf("anonymous /ready = %d %s, want 503 without error text", resp.StatusCode, body)
	}
	checks := decode(t, body)["checks"].(map[string]any)
	if checks["postgres"] != "failing" || checks["raw_indices"] != "degraded" {
		t.Errorf("anonymous checks = %v", checks)
	}
	req, _ := http.NewRequest(http.MethodGet, b.base+"/ready", nil)
	req.Header.Set("Authorization", "Bearer ok")
	_, body = do(t, req)
	if !strings.Contains(string(body), "password authentication failed") || !strings.Contains(string(body), "x_raw_content skipped") {
		t.Errorf("allowed /ready lacks the error text: %s", body)
	}
}

// A client that sends its headers and then trickles (or stalls) its body
// is cut off after ReadTimeout instead of holding the connection.
func TestReadTimeoutCutsSlowBody(t *testing.T) {
	t.Parallel()
	b := setup(t, httpserver.Config{ReadTimeout: 300 * time.Millisecond}, func(r *gin.Engine) {
		r.POST("/upload", func(c *gin.Context) {
			var v map[string]any
			if httpserver.DecodeJSONWith(c, &v, httpserver.JSONOptions{AllowUnknownFields: true}) {
				c.Status(http.StatusNoContent)
			}
		})
	})
	conn, err := net.Dial("tcp", b.server.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":")); err != nil {
		t.Fatal(err)
	}
	// Without the 300ms ReadTimeout nothing would cut the stalled body before
	// the defaults (a 10s header timeout already met, a 30s ReadTimeout): a
	// connection closed within 9s was cut by ReadTimeout, with room for a
	// loaded machine.
	_ = conn.SetReadDeadline(time.Now().Add(9 * time.Second))
	buf := make([]byte, 4096)
	for {
		if _, err := conn.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the server kept the stalled request open for 9s, past its 300ms ReadTimeout")
			}
			break
		}
	}
}

// A known path with another method is 405 with an Allow header naming the
// methods of that resource only, not of a broader pattern it also matches.
func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t, httpserver.Config{}, func(r *gin.Engine) {
		ok := func(c *gin.Context) { c.Status(http.StatusNoContent) }
		r.POST("/dlq/requeue", ok)
		r.GET("/dlq/stats", ok)
		r.DELETE("/dlq/:id", ok)
		r.GET("/dlq/:id", ok)
	})
	for _, tt := range []struct{ method, path, want string }{
		{http.MethodPut, "/dlq/requeue", "POST"}, {http.MethodPut, "/dlq/stats", "GET"}, {http.MethodPut, "/dlq/abc", "DELETE, GET"},
		// Routed to /dlq/:id by the tree, but /dlq/requeue and /dlq/stats
		// own these paths: 405, not a DELETE of the entry "requeue".
		{http.MethodDelete, "/dlq/requeue", "POST"}, {http.MethodGet, "/dlq/requeue", "POST"}, {http.MethodDelete, "/dlq/stats", "GET"},
	} {
		path, want := tt.path, tt.want
		req, _ := http.NewRequest(tt.method, b.base+path, nil)
		resp, body := do(t, req)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != want {
			t.Errorf("%s %s = %d Allow %q, want 405 Allow %q: %s", tt.method, path, resp.StatusCode, resp.Header.Get("Allow"), want, body)
		}
	}
}

// serveOnce runs handler for one GET of target and returns the recorder.
func serveOnce(t *testing.T, target string, handler gin.HandlerFunc) *httptest.ResponseRecorder {
	t.Helper()
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.GET("/page", handler)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w
}

// ?limit= is the default when absent, taken from 1 to the maximum, and a
// 400 bad_request otherwise.
func TestQueryLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query  string
		want   int
		status int
	}{
		{"", 50, http.StatusOK},
		{"?limit=1", 1, http.StatusOK},
		{"?limit=500", 500, http.StatusOK},
		{"?limit=0", 0, http.StatusBadRequest},
		{"?limit=501", 0, http.StatusBadRequest},
		{"?limit=-3", 0, http.StatusBadRequest},
		{"?limit=ten", 0, http.StatusBadRequest},
		{"?limit=", 0, http.StatusBadRequest},
	}
	for _, tt := range tests {
		got := -1
		w := serveOnce(t, "/page"+tt.query, func(c *gin.Context) {
			n, ok := httpserver.QueryLimit(c, 50, 500)
			if ok {
				got = n
				c.Status(http.StatusOK)
			}
		})
		if w.Code != tt.status {
			t.Errorf("%q: status %d, want %d", tt.query, w.Code, tt.status)
			continue
		}
		if tt.status == http.StatusOK && got != tt.want {
			t.Errorf("%q: limit %d, want %d", tt.query, got, tt.want)
		}
		if tt.status == http.StatusBadRequest && errorCode(t, w.Body.Bytes()) != httpserver.CodeBadRequest {
			t.Errorf("%q: body %s, want bad_request", tt.query, w.Body)
		}
	}
}

// Same loop as TestQueryLimit over other cases: kept apart so that each
// helper's cases read with their assertions.
// ?cursor= is the first page when absent, the keyset EncodeCursor wrote,
// and a 400 invalid_cursor for anything else.
func TestQueryCursor(t *testing.T) {
	t.Parallel()
	want := httpserver.Keyset{CreatedAt: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), ID: "0b5c2a4e-3a53-4b8e-9c1e-6a2f1d7c9e10"}
	for _, tt := range []struct {
		query  string
		want   *httpserver.Keyset
		status int
	}{
		{"", nil, http.StatusOK},
		{"?cursor=", nil, http.StatusOK},
		{"?cursor=" + httpserver.EncodeCursor(want), &want, http.StatusOK},
		{"?cursor=bm90LWEtY3Vyc29y", nil, http.StatusBadRequest},
	} {
		var got *httpserver.Keyset
		w := serveOnce(t, "/page"+tt.query, func(c *gin.Context) {
			k, ok := httpserver.QueryCursor(c)
			if ok {
				got = k
				c.Status(http.StatusOK)
			}
		})
		if w.Code != tt.status {
			t.Errorf("%q: status %d, want %d", tt.query, w.Code, tt.status)
			continue
		}
		if tt.status == http.StatusBadRequest {
			if code := errorCode(t, w.Body.Bytes()); code != httpserver.CodeInvalidCursor {
				t.Errorf("%q: code %q, want invalid_cursor", tt.query, code)
			}
			continue
		}
		if (got == nil) != (tt.want == nil) || got != nil && (!got.CreatedAt.Equal(tt.want.CreatedAt) || got.ID != tt.want.ID) {
			t.Errorf("%q: cursor %+v, want %+v", tt.query, got, tt.want)
		}
	}
}

// A dependency that is down answers 503 with the code and message given and
// logs the error; an unexpected failure answers 500 without its detail.
func TestWriteUnavailableAndInternal(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	w := serveOnce(t, "/page", func(c *gin.Context) {
		httpserver.WriteUnavailable(c, logger, httpserver.CodeDatabaseUnavailable, "the store did not answer", errors.New("dial tcp: refused"))
	})
	if w.Code != http.StatusServiceUnavailable || errorCode(t, w.Body.Bytes()) != httpserver.CodeDatabaseUnavailable || strings.Contains(w.Body.String(), "dial") {
		t.Errorf("unavailable: %d %s", w.Code, w.Body)
	}
	w = serveOnce(t, "/page", func(c *gin.Context) {
		httpserver.WriteInternal(c, logger, errors.New("secret detail"))
	})
	if w.Code != http.StatusInternalServerError || errorCode(t, w.Body.Bytes()) != httpserver.CodeInternal || strings.Contains(w.Body.String(), "secret") {
		t.Errorf("internal: %d %s", w.Code, w.Body)
	}
	if !strings.Contains(logs.String(), "dial tcp: refused") || !strings.Contains(logs.String(), "secret detail") {
		t.Errorf("the errors are not logged: %s", logs.String())
	}
}

// Respond answers the value when there is no error, and leaves the answer
// to the service's fail otherwise.
func TestRespond(t *testing.T) {
	t.Parallel()
	fail := func(c *gin.Context, err error) { httpserver.WriteBadRequest(c, err.Error()) }
	w := serveOnce(t, "/page", func(c *gin.Context) {
		httpserver.Respond(c, http.StatusCreated, map[string]int{"n": 1}, nil, fail)
	})
	if w.Code != http.StatusCreated || strings.TrimSpace(w.Body.String()) != `{"n":1}` {
		t.Errorf("value: %d %s", w.Code, w.Body)
	}
	w = serveOnce(t, "/page", func(c *gin.Context) {
		httpserver.Respond(c, http.StatusCreated, map[string]int{"n": 1}, errors.New("n is wrong"), fail)
	})
	if w.Code != http.StatusBadRequest || errorCode(t, w.Body.Bytes()) != httpserver.CodeBadRequest {
		t.Errorf("error: %d %s", w.Code, w.Body)
	}
}
