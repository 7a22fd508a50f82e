package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/httpserver"
	infraopenapi "github.com/north-cloud/infrastructure/openapi"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/api"
	"github.com/north-cloud/publisher/internal/openapi"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/outboxtest"
)

type client struct {
	t      *testing.T
	engine *gin.Engine
	token  string
	doc    *infraopenapi.Document
}

// do serves one request through the server main.go builds and checks the
// answer against the OpenAPI document (status documented, body matching).
func (c *client) do(method, path, body string) (int, map[string]any) {
	c.t.Helper()
	req := httptest.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	c.engine.ServeHTTP(rec, req)
	if err := c.doc.CheckResponse(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
		c.t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		c.t.Fatalf("%s %s: body %q is not JSON: %v", method, path, rec.Body.String(), err)
	}
	return rec.Code, out
}

func setup(t *testing.T) (*client, *outboxtestDB) {
	t.Helper()
	db, _ := outboxtest.Database(t)
	authn := authtest.New(t, strings.Repeat("k", 32))
	token := authtest.Token(t, authn, "operator", auth.RoleOperator)
	srv, err := httpserver.New(httpserver.Config{Addr: ":0", ServiceName: "publisher"}, testenv.Logger(t), http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	if err := api.New(outbox.NewRepository(db), testenv.Logger(t)).Register(srv.Router().Group("/api/v1", authn.Middleware(auth.Policy{}))); err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, engine: srv.Router(), token: token, doc: doc}, &outboxtestDB{t: t, exec: func(q string) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}, id: func(contentID string) string {
		var id string
		if err := db.QueryRow(`SELECT id FROM classified_outbox WHERE content_id = $1`, contentID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}, insert: func(rows []outboxtest.Row) { outboxtest.Insert(t, db, rows) }}
}

type outboxtestDB struct {
	t      *testing.T
	exec   func(string)
	id     func(string) string
	insert func([]outboxtest.Row)
}

func TestOutboxAPI(t *testing.T) {
	t.Parallel()
	c, db := setup(t)
	rows := outboxtest.Rows("api", 7)
	rows[0].IsCrimeRelated, rows[1].IsCrimeRelated = true, true
	rows[2].SourceName = "other_com"
	rows[3].ContentType = "video"
	db.insert(rows)
	db.exec(`UPDATE classified_outbox SET created_at = NOW() - make_interval(secs => 100 - split_part(content_id, '-', 2)::int)`)
	db.exec(`UPDATE classified_outbox SET status = 'published', published_at = created_at + INTERVAL '2 seconds' WHERE content_id IN ('api-4', 'api-5')`)
	db.exec(`UPDATE classified_outbox SET status = 'failed', retry_count = 5, error_message = 'NOPERM' WHERE content_id = 'api-3'`)
	db.exec(`UPDATE classified_outbox SET status = 'failed', retry_count = 1, error_message = 'NOPERM', next_retry_at = NOW() + INTERVAL '1 hour' WHERE content_id = 'api-2'`)

	t.Run("auth required", func(t *testing.T) {
		anon := &client{t: t, engine: c.engine, doc: c.doc}
		if code, body := anon.do("GET", "/api/v1/outbox/stats", ""); code != http.StatusUnauthorized || body["error"] == nil {
			t.Errorf("no token: %d %v", code, body)
		}
	})
	t.Run("stats", func(t *testing.T) {
		code, s := c.do("GET", "/api/v1/outbox/stats", "")
		counts, _ := s["counts"].(map[string]any)
		if code != 200 || counts["pending"] != 3.0 || counts["published"] != 2.0 || counts["failed"] != 2.0 ||
			s["failed_retryable"] != 1.0 || s["failed_exhausted"] != 1.0 || s["avg_publish_lag_seconds"] != 2.0 {
			t.Errorf("stats %d %v", code, s)
		}
		if p95, _ := s["p95_publish_lag_seconds"].(float64); p95 != 2 {
			t.Errorf("p95 %v", s["p95_publish_lag_seconds"])
		}
		if age, _ := s["oldest_pending_age_seconds"].(float64); age < 99 {
			t.Errorf("oldest pending age %v, want about 100", s["oldest_pending_age_seconds"])
		}
	})
	t.Run("stats follow the filters", func(t *testing.T) {
		for query, want := range map[string][4]float64{ // pending, published, failed, exhausted
			"source_contains=OTHER":                 {0, 0, 1, 0},
			"source=example_com":                    {3, 2, 1, 1},
			"crime=true":                            {2, 0, 0, 0},
			"channel=content:video":                 {0, 0, 1, 1},
			"content_id=api-4&index=x":              {0, 0, 0, 0},
			"source_contains=example&status=failed": {3, 2, 1, 1}, // status is not a stats filter
		} {
			code, s := c.do("GET", "/api/v1/outbox/stats?"+query, "")
			counts, _ := s["counts"].(map[string]any)
			got := [4]float64{counts["pending"].(float64), counts["published"].(float64), counts["failed"].(float64), s["failed_exhausted"].(float64)}
			if code != 200 || got != want {
				t.Errorf("stats?%s: %d %v, want %v", query, code, got, want)
			}
		}
		if code, s := c.do("GET", "/api/v1/outbox/stats?crime=maybe", ""); code != 400 {
			t.Errorf("stats with a bad filter: %d %v, want 400", code, s)
		}
	})
	t.Run("list with cursor pagination", func(t *testing.T) {
		var got []string
		cursor := ""
		for page := 0; ; page++ {
			code, body := c.do("GET", "/api/v1/outbox?limit=3&cursor="+cursor, "")
			if code != 200 {
				t.Fatalf("page %d: %d %v", page, code, body)
			}
			for _, e := range body["entries"].([]any) {
				got = append(got, e.(map[string]any)["content_id"].(string))
			}
			cursor, _ = body["next_cursor"].(string)
			if cursor == "" {
				break
			}
		}
		if strings.Join(got, " ") != "api-6 api-5 api-4 api-3 api-2 api-1 api-0" {
			t.Errorf("pages gave %v", got)
		}
	})
	t.Run("list filters", func(t *testing.T) {
		for query, want := range map[string]string{
			"status=failed":                   "api-3 api-2",
			"source=other_com":                "api-2",
			"channel=content:video":           "api-3",
			"crime=true":                      "api-1 api-0",
			"crime=false&status=pending":      "api-6",
			"status=failed&exhausted=true":    "api-3",
			"channel=articles:crime&limit=10": "api-1 api-0",
			// content_id and index are exact: one document's row.
			"content_id=api-4&index=example_com_classified_content": "api-4",
			"content_id=api-4&index=other_com_classified_content":   "",
			"content_id=api-":                    "",
			"index=other_com_classified_content": "api-2",
			// source_contains is a part of the name, any case.
			"source_contains=THER_c":                   "api-2",
			"source_contains=_com&status=failed":       "api-3 api-2",
			"source_contains=example&status=published": "api-5 api-4",
			"source_contains=nowhere":                  "",
		} {
			code, body := c.do("GET", "/api/v1/outbox?"+query, "")
			var got []string
			for _, e := range body["entries"].([]any) {
				got = append(got, e.(map[string]any)["content_id"].(string))
			}
			if code != 200 || strings.Join(got, " ") != want {
				t.Errorf("%s: %d %v, want %s", query, code, got, want)
			}
		}
		_, body := c.do("GET", "/api/v1/outbox?status=failed&exhausted=true", "")
		e := body["entries"].([]any)[0].(map[string]any)
		if e["exhausted"] != true || e["error_message"] != "NOPERM" || e["channel"] != "content:video" {
			t.Errorf("exhausted entry %v", e)
		}
	})
	t.Run("bad input is 400", func(t *testing.T) {
		for _, p := range []string{"/api/v1/outbox?status=done", "/api/v1/outbox?crime=maybe", "/api/v1/outbox?limit=0",
			"/api/v1/outbox?limit=9999"} {
			if code, body := c.do("GET", p, ""); code != 400 || body["error"].(map[string]any)["code"] != "bad_request" {
				t.Errorf("%s: %d %v", p, code, body)
			}
		}
		if code, body := c.do("GET", "/api/v1/outbox?cursor=nonsense", ""); code != 400 || body["error"].(map[string]any)["code"] != "invalid_cursor" {
			t.Errorf("bad cursor: %d %v", code, body)
		}
		if code, _ := c.do("POST", "/api/v1/outbox/not-a-uuid/retry", ""); code != 400 {
			t.Errorf("bad id: %d", code)
		}
		if code, _ := c.do("POST", "/api/v1/outbox/retry", `{"sauce":"x"}`); code != 400 {
			t.Errorf("unknown filter field: %d", code)
		}
	})
	t.Run("retry one", func(t *testing.T) {
		if code, body := c.do("POST", "/api/v1/outbox/00000000-0000-0000-0000-000000000000/retry", ""); code != 404 {
			t.Errorf("unknown id: %d %v", code, body)
		}
		if code, _ := c.do("POST", "/api/v1/outbox/"+db.id("api-6")+"/retry", ""); code != 409 {
			t.Errorf("pending row: %d, want 409", code)
		}
		code, e := c.do("POST", "/api/v1/outbox/"+db.id("api-3")+"/retry", "")
		if code != 200 || e["status"] != "pending" || e["retry_count"] != 0.0 || e["exhausted"] != false {
			t.Errorf("retry exhausted row: %d %v", code, e)
		}
	})
	t.Run("retry matching", func(t *testing.T) {
		if code, body := c.do("POST", "/api/v1/outbox/retry", `{"source_contains":"nowhere"}`); code != 200 || body["requeued"] != 0.0 {
			t.Errorf("retry by a source part matching nothing: %d %v", code, body)
		}
		code, body := c.do("POST", "/api/v1/outbox/retry", `{"source_contains":"Other"}`)
		if code != 200 || body["requeued"] != 1.0 {
			t.Errorf("retry by source part: %d %v", code, body)
		}
		if code, body := c.do("POST", "/api/v1/outbox/retry", `{"all":true}`); code != 200 || body["requeued"] != 0.0 {
			t.Errorf("retry all with none failed: %d %v", code, body)
		}
	})
	t.Run("channels", func(t *testing.T) {
		code, body := c.do("GET", "/api/v1/channels", "")
		if code != 200 {
			t.Fatalf("%d %v", code, body)
		}
		got := map[string]map[string]any{}
		for _, ch := range body["channels"].([]any) {
			m := ch.(map[string]any)
			got[m["channel"].(string)] = m
		}
		news := got["articles:news"]
		if len(got) != 3 || news["published_last_hour"] != 2.0 || news["published_last_day"] != 2.0 || news["last_published_at"] == nil ||
			got["articles:crime"]["unpublished"] != 2.0 || got["content:video"]["unpublished"] != 1.0 {
			t.Errorf("channels %v", got)
		}
	})
}

// Hostile input gets 400 (never 5xx, never an accidental bulk action):
// NUL and invalid UTF-8 in parameters and bodies, null and empty bodies,
// trailing data, a bulk retry without a filter.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	c, db := setup(t)
	rows := outboxtest.Rows("hostile", 2)
	db.insert(rows)
	db.exec(`UPDATE classified_outbox SET status = 'failed', retry_count = 5, error_message = 'NOPERM'`)
	for _, tt := range []struct {
		method, path, body, code string
	}{
		{"GET", "/api/v1/outbox?source=%00", "", "invalid_text"},
		{"GET", "/api/v1/outbox?channel=%ff", "", "invalid_text"},
		{"GET", "/api/v1/outbox?source=" + strings.Repeat("a", 300), "", "bad_request"},
		{"GET", "/api/v1/outbox?content_id=" + strings.Repeat("é", 256), "", "bad_request"},
		{"GET", "/api/v1/outbox?index=" + strings.Repeat("i", 256), "", "bad_request"},
		{"GET", "/api/v1/outbox?content_id=a%00", "", "invalid_text"},
		{"GET", "/api/v1/outbox?index=%c3%28", "", "invalid_text"},
		{"GET", "/api/v1/outbox?source_contains=%00", "", "invalid_text"},
		{"GET", "/api/v1/outbox?source_contains=" + strings.Repeat("a", 300), "", "bad_request"},
		{"GET", "/api/v1/outbox/stats?source_contains=" + strings.Repeat("a", 300), "", "bad_request"},
		{"GET", "/api/v1/outbox/stats?exhausted=", "", "bad_request"},
		{"POST", "/api/v1/outbox/retry", `{"all":true,"source_contains":"x"}`, "bad_request"},
		{"GET", "/api/v1/outbox?status=", "", "bad_request"},
		{"GET", "/api/v1/outbox?crime=", "", "bad_request"},
		{"GET", "/api/v1/outbox?limit=", "", "bad_request"},
		{"POST", "/api/v1/outbox/%00/retry", "", "invalid_text"},
		{"POST", "/api/v1/outbox/retry", `{"source":"\u0000"}`, "invalid_text"},
		{"POST", "/api/v1/outbox/retry", "{\"source\":\"\xff\"}", "invalid_text"},
		{"POST", "/api/v1/outbox/retry", `null`, "invalid_json"},
		{"POST", "/api/v1/outbox/retry", ``, "invalid_json"},
		{"POST", "/api/v1/outbox/retry", `{}`, "bad_request"},
		{"POST", "/api/v1/outbox/retry", `{"all":false}`, "bad_request"},
		{"POST", "/api/v1/outbox/retry", `{"all":true,"source":"x"}`, "bad_request"},
		{"POST", "/api/v1/outbox/retry", `{"source":"hostile_com"} {"all":true}`, "invalid_json"},
		{"POST", "/api/v1/outbox/retry", `{"source":"hostile_com"}x`, "invalid_json"},
		{"POST", "/api/v1/outbox/retry", `[]`, "invalid_json"},
	} {
		code, body := c.do(tt.method, tt.path, tt.body)
		e, _ := body["error"].(map[string]any)
		if code != http.StatusBadRequest || e["code"] != tt.code {
			t.Errorf("%s %s %q: %d %v, want 400 %s", tt.method, tt.path, tt.body, code, body, tt.code)
		}
	}
	if code, s := c.do("GET", "/api/v1/outbox/stats", ""); code != 200 || s["counts"].(map[string]any)["failed"] != 2.0 {
		t.Fatalf("a refused request re-queued rows: %d %v", code, s)
	}
	if code, body := c.do("POST", "/api/v1/outbox/retry", `{"all":true}`); code != 200 || body["requeued"] != 2.0 {
		t.Errorf(`explicit "all": %d %v`, code, body)
	}
}

// The OpenAPI document is served, and matches itself.
func TestServesOpenAPI(t *testing.T) {
	t.Parallel()
	c, _ := setup(t)
	code, body := c.do("GET", "/api/v1/openapi.json", "")
	if code != 200 || body["openapi"] != "3.0.3" {
		t.Fatalf("openapi: %d %v", code, body["openapi"])
	}
}
