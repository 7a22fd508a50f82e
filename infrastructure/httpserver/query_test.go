package httpserver_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/httpserver"
)

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
