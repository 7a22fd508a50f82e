package audit_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

const secret = "0123456789abcdef0123456789abcdef-audit"

// store returns a Store over a fresh database with the audit_log table of
// the classifier's migration (the publisher's is the same table; the
// index-manager's is migrated to it).
func store(t *testing.T) (*audit.Store, *sql.DB) {
	t.Helper()
	dsn := testenv.Postgres(t)
	db, err := postgres.Open(context.Background(), postgres.Config{URL: dsn}, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ddl, err := os.ReadFile("../../classifier/migrations/014_audit_log.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(ddl)); err != nil {
		t.Fatal(err)
	}
	s, err := audit.NewStore(db)
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

type failingRecorder struct{}

func (failingRecorder) Record(context.Context, audit.Entry) error {
	return errors.New("database is down")
}

// server is a service's /api/v1 group as main.go wires it: the audit
// middleware in front of the authenticator's, the policy shared.
func server(t *testing.T, rec audit.Recorder, lister audit.Lister, reader sdkmetric.Reader) (*gin.Engine, func(auth.Role) string) {
	t.Helper()
	a, err := auth.New(auth.Config{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	policy := auth.Policy{Admin: []auth.Route{{Method: http.MethodDelete, Path: "/api/v1/things/:name"}},
		Read: []auth.Route{{Method: http.MethodPost, Path: "/api/v1/things/_search"}}}
	mw, err := audit.Middleware(audit.Config{Recorder: rec, Policy: policy, Logger: testenv.Logger(t),
		Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"), MetricPrefix: "test"})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	v1 := r.Group("/api/v1", mw, a.Middleware(policy))
	v1.GET("/audit", audit.ListHandler(lister, audit.ListOptions{}, testenv.Logger(t)))
	v1.GET("/things", func(c *gin.Context) { c.Status(http.StatusOK) })
	v1.POST("/things/_search", func(c *gin.Context) { c.Status(http.StatusOK) })
	v1.POST("/things", func(c *gin.Context) {
		var body map[string]any
		if err := c.BindJSON(&body); err != nil {
			return
		}
		c.Status(http.StatusCreated)
	})
	v1.PUT("/things/:name", func(c *gin.Context) {
		audit.SetSummary(c, "renamed "+c.Param("name"))
		c.Status(http.StatusOK)
	})
	v1.DELETE("/things/:name", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	token := func(role auth.Role) string {
		tok, _, err := a.Issue(string(role)+"@example.org", role, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	return r, token
}

func call(r *gin.Engine, method, path, token, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec
}

func TestMiddlewareRecordsEveryMutation(t *testing.T) {
	t.Parallel()
	s, _ := store(t)
	r, token := server(t, s, s, sdkmetric.NewManualReader())
	op, viewer, admin := token(auth.RoleOperator), token(auth.RoleViewer), token(auth.RoleAdmin)
	for _, c := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/api/v1/things", viewer, "", 200},                 // a read: not recorded
		{"POST", "/api/v1/things/_search", viewer, `{}`, 200},      // a read by POST: not recorded
		{"POST", "/api/v1/things", "", `{"a":1}`, 401},             // no token: not recorded
		{"POST", "/api/v1/things?dry=1", op, `{"name":"n1"}`, 201}, // body as summary, query as parameters
		{"POST", "/api/v1/things", op, `not json`, 400},            // failure
		{"PUT", "/api/v1/things/n1", op, `{}`, 200},                // the handler's summary
		{"DELETE", "/api/v1/things/n1", op, ``, 403},               // denied for the role
		{"DELETE", "/api/v1/things/n1", admin, ``, 204},            // admin route
	} {
		if rec := call(r, c.method, c.path, c.token, c.body); rec.Code != c.want {
			t.Fatalf("%s %s = %d, want %d: %s", c.method, c.path, rec.Code, c.want, rec.Body)
		}
	}
	list := func(q string) audit.ListResponse {
		t.Helper()
		rec := call(r, "GET", "/api/v1/audit"+q, viewer, "")
		if rec.Code != http.StatusOK {
			t.Fatalf("audit%s = %d %s", q, rec.Code, rec.Body)
		}
		var out audit.ListResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := list("")
	type row struct{ actor, role, method, route, outcome, summary string }
	want := []row{
		{"admin@example.org", "admin", "DELETE", "/api/v1/things/:name", "success", ""},
		{"operator@example.org", "operator", "DELETE", "/api/v1/things/:name", "denied", ""},
		{"operator@example.org", "operator", "PUT", "/api/v1/things/:name", "success", "renamed n1"},
		{"operator@example.org", "operator", "POST", "/api/v1/things", "failure", "not json"},
		{"operator@example.org", "operator", "POST", "/api/v1/things", "success", `{"name":"n1"}`},
	}
	if len(got.Entries) != len(want) {
		t.Fatalf("entries = %+v, want %d", got.Entries, len(want))
	}
	for i, e := range got.Entries {
		w := want[i]
		if (row{e.Actor, e.Role, e.Method, e.Route, e.Outcome, e.Summary}) != w || e.StatusCode == nil || e.FinishedAt == nil || e.CreatedAt.IsZero() {
			t.Errorf("entry %d = %+v, want %+v", i, e, w)
		}
	}
	if p := got.Entries[0].Parameters; p["name"] != "n1" {
		t.Errorf("path parameters = %v", p)
	}
	if q, _ := got.Entries[4].Parameters["query"].(map[string]any); q["dry"] != "1" {
		t.Errorf("query parameters = %v", got.Entries[4].Parameters)
	}
	if *got.Entries[1].StatusCode != http.StatusForbidden {
		t.Errorf("denied status = %d", *got.Entries[1].StatusCode)
	}
	if n := len(list("?actor=admin@example.org").Entries); n != 1 {
		t.Errorf("actor filter: %d entries", n)
	}
	if n := len(list("?role=operator&outcome=denied").Entries); n != 1 {
		t.Errorf("role and outcome filter: %d entries", n)
	}
	if n := len(list("?since=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))).Entries); n != 0 {
		t.Errorf("since the future: %d entries", n)
	}
	var ids []int64
	q := "?limit=2"
	for range 5 {
		page := list(q)
		for _, e := range page.Entries {
			ids = append(ids, e.ID)
		}
		if page.NextBeforeID == 0 {
			break
		}
		q = "?limit=2&before_id=" + jsonNumber(page.NextBeforeID)
	}
	if len(ids) != 5 {
		t.Fatalf("paged ids %v, want 5", ids)
	}
	for _, q := range []string{"?limit=0", "?limit=501", "?before_id=-1", "?outcome=maybe", "?role=root", "?role=", "?since=yesterday"} {
		if rec := call(r, "GET", "/api/v1/audit"+q, viewer, ""); rec.Code != http.StatusBadRequest {
			t.Errorf("audit%s = %d, want 400", q, rec.Code)
		}
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestWriteFailureDoesNotFailTheRequest: the operator's change went
// through; the lost entry is logged and counted.
func TestWriteFailureDoesNotFailTheRequest(t *testing.T) {
	t.Parallel()
	s, _ := store(t)
	reader := sdkmetric.NewManualReader()
	r, token := server(t, failingRecorder{}, s, reader)
	if rec := call(r, "PUT", "/api/v1/things/n1", token(auth.RoleOperator), `{}`); rec.Code != http.StatusOK {
		t.Fatalf("PUT = %d, want 200 although the audit write failed", rec.Code)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "test_audit_write_failures_total" {
				for _, dp := range sum.DataPoints {
					total += dp.Value
				}
			}
		}
	}
	if total != 1 {
		t.Fatalf("test_audit_write_failures_total = %d, want 1", total)
	}
}

// TestStoreBoundsAndBegin: Begin writes a pending entry that Finish
// completes; oversized parameters and error text are bounded.
func TestStoreBoundsAndBegin(t *testing.T) {
	t.Parallel()
	s, _ := store(t)
	ctx := context.Background()
	id, err := s.Begin(ctx, audit.Entry{Actor: "a\nb", Role: "admin", Method: "POST", Route: "/api/v1/x", Action: "create", Target: "idx",
		Parameters: map[string]any{"pad": strings.Repeat("x", 1<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, audit.Filter{Target: "idx"})
	if err != nil || len(got) != 1 || got[0].Outcome != audit.OutcomePending || got[0].Parameters[audit.TruncatedMarker] != true || got[0].Actor != `"a\nb"` {
		t.Fatalf("pending entry = %+v, %v", got, err)
	}
	if err := s.Finish(ctx, id, audit.OutcomeFailure, 500, strings.Repeat("é", 100<<10)); err != nil {
		t.Fatal(err)
	}
	got, err = s.List(ctx, audit.Filter{Action: "create", Outcome: audit.OutcomeFailure})
	if err != nil || len(got) != 1 || len(got[0].Error) > audit.MaxErrorBytes || got[0].FinishedAt == nil || *got[0].StatusCode != 500 {
		t.Fatalf("finished entry = %+v, %v", got, err)
	}
	if err := s.Finish(ctx, id+1, audit.OutcomeSuccess, 200, ""); err == nil {
		t.Fatal("Finish of a missing entry succeeded")
	}
}

// migrated returns a fresh database with the given migration files of
// this repository applied in order.
func migrated(t *testing.T, files ...string) *sql.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), postgres.Config{URL: testenv.Postgres(t)}, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, f := range files {
		exec(t, db, f)
	}
	return db
}

func exec(t *testing.T, db *sql.DB, file string) {
	t.Helper()
	ddl, err := os.ReadFile("../../" + file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(ddl)); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func columns(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var cols string
	if err := db.QueryRow(`SELECT string_agg(column_name || ' ' || data_type || COALESCE('(' || character_maximum_length || ')', '') || ' ' ||
		is_nullable || ' ' || COALESCE(column_default, ''), ', ' ORDER BY column_name)
		FROM information_schema.columns WHERE table_name = $1`, table).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	return cols
}

// TestEveryServiceHasTheSameAuditTable: the classifier's and the
// publisher's audit_log and the index-manager's, migrated from its former
// index_audit_log with its rows kept, have the same columns; the
// index-manager's down migration gives its table back.
func TestEveryServiceHasTheSameAuditTable(t *testing.T) {
	t.Parallel()
	classifier := migrated(t, "classifier/migrations/014_audit_log.up.sql")
	publisher := migrated(t, "publisher/migrations/009_audit_log.up.sql")
	im := migrated(t, "index-manager/migrations/001_audit_log.up.sql", "index-manager/migrations/002_index_stats_samples.up.sql")
	if _, err := im.Exec(`INSERT INTO index_audit_log (actor, action, index_name, outcome, status_code) VALUES ('op', 'delete', 'a_raw_content', 'success', 200)`); err != nil {
		t.Fatal(err)
	}
	before := columns(t, im, "index_audit_log")
	exec(t, im, "index-manager/migrations/003_audit_log.up.sql")

	want := columns(t, classifier, "audit_log")
	if got := columns(t, publisher, "audit_log"); got != want {
		t.Errorf("publisher audit_log:\n%s\nwant the classifier's:\n%s", got, want)
	}
	if got := columns(t, im, "audit_log"); got != want {
		t.Errorf("index-manager audit_log:\n%s\nwant the classifier's:\n%s", got, want)
	}
	s, err := audit.NewStore(im)
	if err != nil {
		t.Fatal(err)
	}
	old, err := s.List(context.Background(), audit.Filter{Target: "a_raw_content"})
	if err != nil || len(old) != 1 || old[0].Role != "admin" || old[0].Method != "DELETE" || old[0].Route != "/api/v1/indices/:name" || old[0].Action != "delete" {
		t.Fatalf("the former row: %+v %v", old, err)
	}
	exec(t, im, "index-manager/migrations/003_audit_log.down.sql")
	if got := columns(t, im, "index_audit_log"); got != before {
		t.Errorf("after down:\n%s\nwant:\n%s", got, before)
	}
}
