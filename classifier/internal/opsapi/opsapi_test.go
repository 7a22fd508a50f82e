package opsapi

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/north-cloud/classifier/internal/dbtest"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/openapi"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/httpserver"
	infraopenapi "github.com/north-cloud/infrastructure/openapi"
	"github.com/north-cloud/infrastructure/testenv"
)

type bundle struct {
	router *gin.Engine
	db     *sql.DB
	token  string
	dlq    *deadletter.Repository
	doc    *infraopenapi.Document
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with more dependencies: deps, when set, completes
// the Deps main would give, over the test's database.
func setupWith(t *testing.T, deps func(db *sql.DB, d *Deps)) *bundle {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	logger := testenv.Logger(t)
	authn := authtest.New(t, "0123456789abcdef0123456789abcdef-test")
	token := authtest.Token(t, authn, "operator@example.org", auth.RoleOperator)
	// Served as main.go serves it: the shared server (text rule, body
	// limit) and the JWT-guarded group.
	srv, err := httpserver.New(httpserver.Config{Addr: ":0", ServiceName: "classifier"}, logger, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	router := srv.Router()
	dlq := deadletter.NewRepository(db)
	d := Deps{DeadLetters: dlq, Sources: reputation.NewRepository(db), History: storage.NewHistoryRepository(db), Logger: logger}
	if deps != nil {
		deps(db, &d)
	}
	if err := Register(router.Group("/api/v1", authn.Middleware(auth.Policy{})), d); err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{router: router, db: db, token: token, dlq: dlq, doc: doc}
}

// doRaw sends body as is and checks the answer against the OpenAPI
// document; it returns the status and the error code, if any.
func (b *bundle) doRaw(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	b.router.ServeHTTP(w, req)
	b.validate(t, req, w)
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &e)
	return w.Code, e.Error.Code
}

// validate checks a real answer against the classifier's OpenAPI document.
func (b *bundle) validate(t *testing.T, req *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	if err := b.doc.CheckResponse(req, w.Code, w.Header(), w.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) do(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var r *bytes.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		r = bytes.NewReader(raw)
	} else {
		r = bytes.NewReader(nil)
	}
	req := httptest.NewRequest(method, "http://localhost"+path, r)
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	b.router.ServeHTTP(w, req)
	b.validate(t, req, w)
	if out != nil && w.Body.Len() > 0 {
		if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, w.Body.String(), err)
		}
	}
	return w.Code
}

func (b *bundle) seed(t *testing.T) {
	t.Helper()
	var failures []domain.DeadLetterEntry
	for i := range 5 {
		failures = append(failures, domain.DeadLetterEntry{ContentID: "es-" + string(rune('a'+i)), SourceName: "alpha", IndexName: "alpha_raw_content", ErrorCode: domain.ErrorCodeESUnavailable, ErrorMessage: "timeout"})
	}
	failures = append(failures,
		domain.DeadLetterEntry{ContentID: "bad-url", SourceName: "beta", IndexName: "beta_raw_content", ErrorCode: domain.ErrorCodeValidation, ErrorMessage: "url is ftp"},
		domain.DeadLetterEntry{ContentID: "panic", SourceName: "beta", IndexName: "beta_raw_content", ErrorCode: domain.ErrorCodeRulePanic, ErrorMessage: "boom"})
	if _, err := b.dlq.EnqueueBatch(context.Background(), failures); err != nil {
		t.Fatal(err)
	}
}

type entry struct {
	ID           string  `json:"id"`
	ContentID    string  `json:"content_id"`
	ErrorCode    string  `json:"error_code"`
	RetryCount   int     `json:"retry_count"`
	MaxRetries   int     `json:"max_retries"`
	Exhausted    bool    `json:"exhausted"`
	Retryable    bool    `json:"retryable"`
	RetryRefusal *string `json:"retry_refusal"`
}

// bulkResult is the answer of POST /dlq/requeue and POST /dlq/delete.
type bulkResult struct {
	Requeued      int            `json:"requeued"`
	Deleted       int            `json:"deleted"`
	Skipped       int            `json:"skipped"`
	SkippedByCode map[string]int `json:"skipped_by_code"`
	SkippedReason *string        `json:"skipped_reason"`
}

type page struct {
	Entries    []entry `json:"entries"`
	NextCursor *string `json:"next_cursor"`
}

func TestDeadLetterListFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)

	seen := map[string]bool{}
	path := "/api/v1/dlq?limit=3"
	for pages := 0; ; pages++ {
		var p page
		if code := b.do(t, "GET", path, nil, &p); code != 200 {
			t.Fatalf("GET %s = %d", path, code)
		}
		for _, e := range p.Entries {
			if seen[e.ContentID] {
				t.Fatalf("%s listed twice", e.ContentID)
			}
			seen[e.ContentID] = true
		}
		if p.NextCursor == nil {
			break
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		path = "/api/v1/dlq?limit=3&cursor=" + *p.NextCursor
	}
	if len(seen) != 7 {
		t.Errorf("paged through %d entries, want 7", len(seen))
	}

	var p page
	b.do(t, "GET", "/api/v1/dlq?source=beta&exhausted=true", nil, &p)
	if len(p.Entries) != 1 || p.Entries[0].ContentID != "bad-url" || !p.Entries[0].Exhausted || p.Entries[0].MaxRetries != 0 {
		t.Errorf("beta exhausted = %+v, want only the validation failure, with no retries", p.Entries)
	}
	b.do(t, "GET", "/api/v1/dlq?error_code=rule_panic", nil, &p)
	if len(p.Entries) != 1 || p.Entries[0].ContentID != "panic" {
		t.Errorf("by error code = %+v", p.Entries)
	}

	// One document's entries: content_id and index are exact, so a prefix
	// or another index matches nothing.
	b.do(t, "GET", "/api/v1/dlq?content_id=es-c&index=alpha_raw_content", nil, &p)
	if len(p.Entries) != 1 || p.Entries[0].ContentID != "es-c" {
		t.Errorf("by content_id and index = %+v, want es-c alone", p.Entries)
	}
	for _, none := range []string{"/api/v1/dlq?content_id=es-c&index=beta_raw_content", "/api/v1/dlq?content_id=es-", "/api/v1/dlq?index=alpha_raw"} {
		b.do(t, "GET", none, nil, &p)
		if len(p.Entries) != 0 {
			t.Errorf("GET %s = %+v, want no entries (exact filters)", none, p.Entries)
		}
	}
	b.do(t, "GET", "/api/v1/dlq?index=beta_raw_content", nil, &p)
	if len(p.Entries) != 2 {
		t.Errorf("by index = %d entries, want beta's 2", len(p.Entries))
	}

	for _, bad := range []string{
		"/api/v1/dlq?exhausted=maybe", "/api/v1/dlq?limit=0", "/api/v1/dlq?limit=501", "/api/v1/dlq?cursor=zzz",
		"/api/v1/dlq?content_id=" + strings.Repeat("é", 513), "/api/v1/dlq?index=" + strings.Repeat("i", 256),
	} {
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		if code := b.do(t, "GET", bad, nil, &e); code != 400 || e.Error.Code == "" {
			t.Errorf("GET %s = %d %+v, want 400 with a code", bad, code, e)
		}
	}
}

func TestDeadLetterStatsRequeueAndDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)

	var s deadletter.Stats
	if code := b.do(t, "GET", "/api/v1/dlq/stats", nil, &s); code != 200 {
		t.Fatalf("stats = %d", code)
	}
	if s.Pending != 6 || s.Exhausted != 1 || s.BySource["alpha"] != 5 || s.ByErrorCode["VALIDATION_ERROR"] != 1 || s.OldestEntry == nil {
		t.Errorf("stats = %+v", s)
	}

	// The validation failure is permanent: it is listed as not retryable,
	// with the reason, and its retry is refused with 409 and the reason,
	// leaving it as it was.
	var p page
	b.do(t, "GET", "/api/v1/dlq?exhausted=true", nil, &p)
	if len(p.Entries) != 1 || p.Entries[0].ErrorCode != "VALIDATION_ERROR" || p.Entries[0].Retryable || p.Entries[0].RetryRefusal == nil ||
		!strings.Contains(*p.Entries[0].RetryRefusal, "permanent") {
		t.Fatalf("exhausted entries = %+v, want the VALIDATION_ERROR one, not retryable, with the reason", p.Entries)
	}
	var refused struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if code := b.do(t, "POST", "/api/v1/dlq/"+p.Entries[0].ID+"/requeue", nil, &refused); code != 409 || refused.Error.Code != "conflict" ||
		!strings.Contains(refused.Error.Message, "VALIDATION_ERROR is permanent") {
		t.Fatalf("requeue of a VALIDATION_ERROR entry = %d %+v, want 409 with the reason", code, refused)
	}
	var maxRetries int
	var due bool
	if err := b.db.QueryRow(`SELECT max_retries, next_retry_at <= NOW() FROM dead_letter_queue WHERE content_id = 'bad-url'`).Scan(&maxRetries, &due); err != nil || maxRetries != 0 || due {
		t.Errorf("after the refused requeue: max_retries=%d due=%t err=%v, want 0 and not due", maxRetries, due, err)
	}
	// A retryable entry is re-queued: due now.
	b.do(t, "GET", "/api/v1/dlq?error_code=RULE_PANIC", nil, &p)
	var resp map[string]any
	if code := b.do(t, "POST", "/api/v1/dlq/"+p.Entries[0].ID+"/requeue", nil, &resp); code != 200 || resp["requeued"] != float64(1) || !p.Entries[0].Retryable {
		t.Fatalf("requeue one = %d %v (retryable %t)", code, resp, p.Entries[0].Retryable)
	}
	// Beta's entries by filter: the RULE_PANIC one is re-queued, the
	// VALIDATION_ERROR one skipped and counted, with the reason.
	if code := b.do(t, "POST", "/api/v1/dlq/requeue", map[string]any{"source": "beta"}, &resp); code != 200 || resp["requeued"] != float64(1) ||
		resp["skipped"] != float64(1) || resp["skipped_by_code"].(map[string]any)["VALIDATION_ERROR"] != float64(1) ||
		!strings.Contains(fmt.Sprint(resp["skipped_reason"]), "permanent") {
		t.Fatalf("requeue source=beta = %d %v, want 1 re-queued and the VALIDATION_ERROR one skipped with the reason", code, resp)
	}
	if err := b.db.QueryRow(`SELECT max_retries FROM dead_letter_queue WHERE content_id = 'bad-url'`).Scan(&maxRetries); err != nil || maxRetries != 0 {
		t.Errorf("the skipped entry: max_retries=%d err=%v, want 0 (untouched)", maxRetries, err)
	}

	// Requeue everything from alpha by filter.
	if _, err := b.db.Exec(`UPDATE dead_letter_queue SET retry_count = 3, next_retry_at = NOW() + INTERVAL '1 hour' WHERE source_name = 'alpha'`); err != nil {
		t.Fatal(err)
	}
	if code := b.do(t, "POST", "/api/v1/dlq/requeue", map[string]any{"source": "alpha"}, &resp); code != 200 || resp["requeued"] != float64(5) || resp["skipped"] != float64(0) {
		t.Fatalf("requeue by filter = %d %v, want 5", code, resp)
	}
	var reset int
	if err := b.db.QueryRow(`SELECT COUNT(*) FROM dead_letter_queue WHERE source_name = 'alpha' AND retry_count = 0 AND next_retry_at <= NOW()`).Scan(&reset); err != nil || reset != 5 {
		t.Errorf("alpha entries reset and due = %d (err %v), want 5", reset, err)
	}
	if code := b.do(t, "POST", "/api/v1/dlq/requeue", "not a filter", nil); code != 400 {
		t.Errorf("requeue with a bad body = %d, want 400", code)
	}

	// An entry's attempts: its one failure so far; 404 and 400 otherwise.
	b.do(t, "GET", "/api/v1/dlq?error_code=RULE_PANIC", nil, &p)
	var attempts struct {
		ID       string `json:"id"`
		Kept     int    `json:"kept"`
		Attempts []struct {
			At           string `json:"at"`
			ErrorCode    string `json:"error_code"`
			ErrorMessage string `json:"error_message"`
			Retry        int    `json:"retry"`
		} `json:"attempts"`
	}
	if code := b.do(t, "GET", "/api/v1/dlq/"+p.Entries[0].ID+"/attempts", nil, &attempts); code != 200 || attempts.ID != p.Entries[0].ID ||
		attempts.Kept != deadletter.AttemptsKept || len(attempts.Attempts) != 1 || attempts.Attempts[0].ErrorCode != "RULE_PANIC" ||
		attempts.Attempts[0].ErrorMessage != "boom" || attempts.Attempts[0].Retry != 0 || attempts.Attempts[0].At == "" {
		t.Errorf("attempts = %d %+v, want the one RULE_PANIC failure", code, attempts)
	}
	if code, ec := b.doRaw(t, "GET", "/api/v1/dlq/00000000-0000-0000-0000-000000000000/attempts", ""); code != 404 || ec != "not_found" {
		t.Errorf("attempts of no entry = %d %s, want 404", code, ec)
	}
	if code, ec := b.doRaw(t, "GET", "/api/v1/dlq/nope/attempts", ""); code != 400 || ec != "bad_request" {
		t.Errorf("attempts of a malformed id = %d %s, want 400", code, ec)
	}

	// Delete one; unknown and malformed ids.
	if code := b.do(t, "DELETE", "/api/v1/dlq/"+p.Entries[0].ID, nil, nil); code != 204 {
		t.Errorf("delete = %d, want 204", code)
	}
	if code := b.do(t, "DELETE", "/api/v1/dlq/"+p.Entries[0].ID, nil, nil); code != 404 {
		t.Errorf("second delete = %d, want 404", code)
	}
	if code := b.do(t, "POST", "/api/v1/dlq/not-a-uuid/requeue", nil, nil); code != 400 {
		t.Errorf("requeue of a malformed id = %d, want 400", code)
	}
}

func TestSourcesAndStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if err := reputation.NewRepository(b.db).Add(ctx, map[string]reputation.Delta{
		"good": {Total: 100, Classified: 100, QualitySum: 9000},
		"poor": {Total: 100, Classified: 50, Failed: 50, QualitySum: 1500},
	}); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Sources []reputation.Source `json:"sources"`
	}
	if code := b.do(t, "GET", "/api/v1/sources", nil, &list); code != 200 || len(list.Sources) != 2 {
		t.Fatalf("sources = %d %+v", code, list)
	}
	if list.Sources[0].Name != "good" || list.Sources[0].ReputationScore <= list.Sources[1].ReputationScore {
		t.Errorf("sources not ordered by reputation: %+v", list.Sources)
	}
	var one reputation.Source
	if code := b.do(t, "GET", "/api/v1/sources/poor", nil, &one); code != 200 || one.AverageQuality != 30 || one.FailedDocuments != 50 {
		t.Errorf("source poor = %d %+v", code, one)
	}
	if code := b.do(t, "GET", "/api/v1/sources/nobody", nil, nil); code != 404 {
		t.Errorf("unknown source = %d, want 404", code)
	}

	if _, err := b.db.Exec(`INSERT INTO classification_history (content_id, claim_id, source_name, index_name, content_type, quality_score, topics, classifier_version)
		VALUES ('a','c','good','good_classified_content','article',80,'{politics,local_news}','t'),
		       ('b','c','good','good_classified_content','article',70,'{politics}','t'),
		       ('c','c','poor','poor_classified_content','page',20,'{}','t')`); err != nil {
		t.Fatal(err)
	}
	var st storage.Stats
	if code := b.do(t, "GET", "/api/v1/stats?window=1h&interval=1m", nil, &st); code != 200 {
		t.Fatalf("stats = %d", code)
	}
	if st.Total != 3 || st.ByTopic["politics"] != 2 || st.BySource["good"] != 2 || len(st.PerInterval) == 0 {
		t.Errorf("stats = %+v", st)
	}
	// One source: its total, buckets and topics; by_source still lists
	// every source of the window, the ones there are to pick from.
	st = storage.Stats{}
	if code := b.do(t, "GET", "/api/v1/stats?window=1h&interval=1m&source=good", nil, &st); code != 200 {
		t.Fatalf("stats of one source = %d", code)
	}
	if st.Total != 2 || st.ByTopic["politics"] != 2 || st.ByTopic["local_news"] != 1 || len(st.ByTopic) != 2 ||
		st.BySource["good"] != 2 || st.BySource["poor"] != 1 {
		t.Errorf("stats of source good = %+v, want its 2 and every source listed", st)
	}
	st = storage.Stats{}
	if code := b.do(t, "GET", "/api/v1/stats?window=1h&interval=1m&source=nobody", nil, &st); code != 200 || st.Total != 0 || len(st.PerInterval) != 0 {
		t.Errorf("stats of a source without classifications = %d %+v, want none", code, st)
	}
	for _, bad := range []string{"/api/v1/stats?window=forever", "/api/v1/stats?interval=1s", "/api/v1/stats?window=168h&interval=10s",
		"/api/v1/stats?source=" + strings.Repeat("s", 256)} {
		if code := b.do(t, "GET", bad, nil, nil); code != 400 {
			t.Errorf("GET %s = %d, want 400", bad, code)
		}
	}
}

func TestOperationsNeedAToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/api/v1/dlq", "/api/v1/dlq/stats", "/api/v1/sources", "/api/v1/stats"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		w := httptest.NewRecorder()
		b.router.ServeHTTP(w, req)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token = %d, want 401", path, w.Code)
		}
	}
}

// NUL and invalid UTF-8 in parameters and bodies get 400, never a 5xx from
// Postgres; a bulk requeue needs a filter or "all": true, and null, empty
// and trailing bodies are refused without re-queueing anything.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	if _, err := b.db.Exec(`UPDATE dead_letter_queue SET retry_count = 3, next_retry_at = NOW() + INTERVAL '1 hour'`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ method, path, body, code string }{
		{"GET", "/api/v1/dlq?source=%00", "", "invalid_text"},
		{"GET", "/api/v1/dlq?error_code=%c3%28", "", "invalid_text"},
		{"GET", "/api/v1/dlq?content_id=a%00b", "", "invalid_text"},
		{"GET", "/api/v1/dlq?index=%ff", "", "invalid_text"},
		{"GET", "/api/v1/sources/%00", "", "invalid_text"},
		{"GET", "/api/v1/sources/a%ffb", "", "invalid_text"},
		{"GET", "/api/v1/sources/" + strings.Repeat("s", 300), "", "bad_request"},
		{"POST", "/api/v1/dlq/requeue", "", "invalid_json"},
		{"POST", "/api/v1/dlq/requeue", "null", "invalid_json"},
		{"POST", "/api/v1/dlq/requeue", "{}", "bad_request"},
		{"POST", "/api/v1/dlq/requeue", `{"all":true,"source":"alpha"}`, "bad_request"},
		{"POST", "/api/v1/dlq/requeue", `{"source":"alpha"} {"all":true}`, "invalid_json"},
		{"POST", "/api/v1/dlq/requeue", `{"source":"\u0000"}`, "invalid_text"},
		{"POST", "/api/v1/dlq/requeue", `{"sauce":"alpha"}`, "invalid_json"},
		{"GET", "/api/v1/dlq?cursor=nonsense", "", "invalid_cursor"},
		{"GET", "/api/v1/dlq?exhausted=", "", "bad_request"},
		{"GET", "/api/v1/dlq?limit=", "", "bad_request"},
	} {
		if code, ec := b.doRaw(t, tt.method, tt.path, tt.body); code != http.StatusBadRequest || ec != tt.code {
			t.Errorf("%s %s %q: %d %s, want 400 %s", tt.method, tt.path, tt.body, code, ec, tt.code)
		}
	}
	var due int
	if err := b.db.QueryRow(`SELECT COUNT(*) FROM dead_letter_queue WHERE retry_count = 0`).Scan(&due); err != nil || due != 0 {
		t.Fatalf("a refused request re-queued %d entries (%v)", due, err)
	}
	var resp bulkResult
	if code := b.do(t, "POST", "/api/v1/dlq/requeue", map[string]any{"all": true}, &resp); code != 200 || resp.Requeued != 6 || resp.Skipped != 1 {
		t.Errorf(`requeue with "all": %d %+v, want 6 re-queued and the VALIDATION_ERROR one skipped`, code, resp)
	}
}

// An entry recorded without a source name cannot be selected by source (an
// empty source is "any"): no_source=true selects exactly those, in the
// list and the bulk routes, and POST /dlq/delete deletes what a filter
// matches and says how many.
func TestDeadLetterNoSourceAndDeleteByFilter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	if _, err := b.dlq.EnqueueBatch(context.Background(), []domain.DeadLetterEntry{
		{ContentID: "nameless-1", SourceName: "", IndexName: "alpha_raw_content", ErrorCode: domain.ErrorCodeValidation, ErrorMessage: "no source"},
		{ContentID: "nameless-2", SourceName: "", IndexName: "beta_raw_content", ErrorCode: domain.ErrorCodeRulePanic, ErrorMessage: "no source"},
	}); err != nil {
		t.Fatal(err)
	}
	var p page
	if code := b.do(t, "GET", "/api/v1/dlq?no_source=true", nil, &p); code != 200 || len(p.Entries) != 2 {
		t.Fatalf("GET ?no_source=true = %d, %d entries, want the 2 nameless", code, len(p.Entries))
	}
	for _, e := range p.Entries {
		if !strings.HasPrefix(e.ContentID, "nameless-") {
			t.Errorf("no_source selected %s", e.ContentID)
		}
	}
	if code := b.do(t, "GET", "/api/v1/dlq?no_source=false", nil, &p); code != 200 || len(p.Entries) != 9 {
		t.Errorf("GET ?no_source=false = %d, %d entries, want all 9 (false does not filter)", code, len(p.Entries))
	}
	for _, bad := range []string{"/api/v1/dlq?no_source=maybe", "/api/v1/dlq?no_source=", "/api/v1/dlq?no_source=true&source=alpha"} {
		if code, errCode := b.doRaw(t, "GET", bad, ""); code != 400 || errCode == "" {
			t.Errorf("GET %s = %d %q, want 400", bad, code, errCode)
		}
	}

	// Delete by filter: the nameless entries of one error code, then refusals.
	var resp bulkResult
	if code := b.do(t, "POST", "/api/v1/dlq/delete", map[string]any{"no_source": true, "error_code": "RULE_PANIC"}, &resp); code != 200 || resp.Deleted != 1 {
		t.Fatalf("delete no_source+RULE_PANIC = %d %v, want 1", code, resp)
	}
	count := func(where string) int {
		var n int
		if err := b.db.QueryRow(`SELECT COUNT(*) FROM dead_letter_queue WHERE ` + where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("content_id = 'nameless-2'"); n != 0 {
		t.Errorf("nameless-2 still there")
	}
	if n := count("error_code = 'RULE_PANIC'"); n != 1 {
		t.Errorf("RULE_PANIC entries = %d, want beta's 1 kept", n)
	}
	if code := b.do(t, "POST", "/api/v1/dlq/requeue", map[string]any{"no_source": true}, &resp); code != 200 || resp.Requeued != 0 || resp.SkippedByCode["VALIDATION_ERROR"] != 1 {
		t.Errorf("requeue no_source = %d %+v, want nameless-1 skipped: VALIDATION_ERROR is permanent", code, resp)
	}
	if code := b.do(t, "POST", "/api/v1/dlq/delete", map[string]any{"source": "alpha"}, &resp); code != 200 || resp.Deleted != 5 {
		t.Fatalf("delete source=alpha = %d %v, want 5", code, resp)
	}
	if n := count("TRUE"); n != 3 {
		t.Errorf("entries left = %d, want 3", n)
	}
	for _, body := range []string{"", "null", "{}", `{"all":true,"source":"beta"}`, `{"all":true,"no_source":true}`, `{"source":"beta","no_source":true}`, `{"sauce":"beta"}`} {
		if code, errCode := b.doRaw(t, "POST", "/api/v1/dlq/delete", body); code != 400 {
			t.Errorf("delete with %q = %d %q, want 400", body, code, errCode)
		}
	}
	if n := count("TRUE"); n != 3 {
		t.Errorf("entries left after refusals = %d, want 3", n)
	}
	if code := b.do(t, "POST", "/api/v1/dlq/delete", map[string]any{"all": true}, &resp); code != 200 || resp.Deleted != 3 {
		t.Errorf("delete all = %d %v, want 3", code, resp)
	}
}

// A source's dead letters are counted by its raw index (GET /sources/stats'
// dead_letters), the entries recorded without a source name included: the
// index filter lists exactly those, and the bulk routes act on what it
// lists.
func TestDeadLetterByIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	if _, err := b.dlq.EnqueueBatch(context.Background(), []domain.DeadLetterEntry{
		{ContentID: "nameless-alpha", SourceName: "", IndexName: "alpha_raw_content", ErrorCode: domain.ErrorCodeValidation, ErrorMessage: "no source"},
	}); err != nil {
		t.Fatal(err)
	}
	var p page
	if code := b.do(t, "GET", "/api/v1/dlq?index=alpha_raw_content", nil, &p); code != 200 || len(p.Entries) != 6 {
		t.Fatalf("GET ?index=alpha_raw_content = %d, %d entries, want alpha's 5 and the nameless one", code, len(p.Entries))
	}
	var resp bulkResult
	if code := b.do(t, "POST", "/api/v1/dlq/requeue", map[string]any{"index": "alpha_raw_content", "error_code": "VALIDATION_ERROR"}, &resp); code != 200 || resp.Requeued != 0 || resp.Skipped != 1 || resp.SkippedReason == nil {
		t.Errorf("requeue index+VALIDATION_ERROR = %d %+v, want the nameless one skipped with the reason", code, resp)
	}
	long := `{"index":"` + strings.Repeat("x", 256) + `"}`
	if code, errCode := b.doRaw(t, "POST", "/api/v1/dlq/delete", long); code != 400 {
		t.Errorf("delete with a 256-character index = %d %q, want 400", code, errCode)
	}
	if code, errCode := b.doRaw(t, "POST", "/api/v1/dlq/delete", `{"all":true,"index":"alpha_raw_content"}`); code != 400 {
		t.Errorf("delete all with an index = %d %q, want 400", code, errCode)
	}
	if code := b.do(t, "POST", "/api/v1/dlq/delete", map[string]any{"index": "alpha_raw_content"}, &resp); code != 200 || resp.Deleted != 6 {
		t.Fatalf("delete index=alpha_raw_content = %d %v, want 6", code, resp)
	}
	var left []string
	rows, err := b.db.Query(`SELECT index_name FROM dead_letter_queue ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		left = append(left, s)
	}
	if strings.Join(left, ",") != "beta_raw_content,beta_raw_content" {
		t.Errorf("entries left: %v, want beta's 2", left)
	}
}
