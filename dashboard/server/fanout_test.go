package server_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	server "github.com/north-cloud/dashboard-server"
)

// services stands in for the three services' HTTP APIs (the dashboard
// server's side of them: routes and answers), counting the requests each
// path got.
type services struct {
	mu     sync.Mutex
	hits   map[string]int
	auth   map[string]string
	routes map[string]http.HandlerFunc // "service path" -> handler
}

func (s *services) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[key]
}

func (s *services) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.hits {
		n += v
	}
	return n
}

func jsonAnswer(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"no such document"}}`)
}

// fanoutSetup starts the dashboard server over stand-ins of the services
// and Prometheus answering routes; a path with no route is 404.
func fanoutSetup(t *testing.T, routes map[string]http.HandlerFunc) (*httptest.Server, *services) {
	t.Helper()
	s := &services{hits: map[string]int{}, auth: map[string]string{}, routes: routes}
	urls := map[string]string{}
	for _, name := range []string{"classifier", "publisher", "index-manager", "prometheus"} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := name + " " + r.URL.Path
			s.mu.Lock()
			s.hits[key]++
			s.auth[name] = r.Header.Get("Authorization")
			h := s.routes[key]
			s.mu.Unlock()
			if h == nil {
				notFound(w, r)
				return
			}
			h(w, r)
		}))
		t.Cleanup(up.Close)
		urls[name] = up.URL
	}
	b := setupWith(t, bundle{}, server.Config{
		Dist: t.TempDir(), ClassifierURL: urls["classifier"], PublisherURL: urls["publisher"],
		IndexManagerURL: urls["index-manager"], PrometheusURL: urls["prometheus"], Auth: testAuth,
	})
	return b.srv, s
}

func overviewRoutes() map[string]http.HandlerFunc {
	vector := jsonAnswer(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector",
		"result": []any{map[string]any{"metric": map[string]string{"source": "a"}, "value": []any{1, "2"}}}}})
	matrix := jsonAnswer(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix",
		"result": []any{map[string]any{"metric": map[string]string{}, "values": []any{[]any{1, "3"}}}}}})
	return map[string]http.HandlerFunc{
		"classifier /api/v1/stats":     jsonAnswer(map[string]any{"total": 5, "per_interval": []any{}, "by_topic": map[string]int{"crime": 5}}),
		"classifier /api/v1/dlq/stats": jsonAnswer(map[string]any{"pending": 1, "exhausted": 2}),
		"classifier /metrics": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = io.WriteString(w, "classifier_queue_depth{source=\"a\"} 3\nclassifier_queue_depth{source=\"b\"} 4\nclassifier_active_workers 2\n")
		},
		"publisher /api/v1/outbox/stats":       jsonAnswer(map[string]any{"counts": map[string]int{"pending": 1}}),
		"index-manager /api/v1/content/_count": jsonAnswer(map[string]any{"count": 9}),
		"prometheus /api/v1/query_range":       matrix,
		"prometheus /api/v1/query":             vector,
	}
}

type summary struct {
	Range                                                        string
	Stats, DLQ, Outbox, Classified, Metrics, History, Throughput struct {
		OK     bool
		Status int
		Data   json.RawMessage
		Error  *struct{ Code, Message string }
	}
}

func getSummary(t *testing.T, url, tok string) (int, summary) {
	t.Helper()
	status, _, body := get(t, url, "Authorization", "Bearer "+tok)
	var s summary
	if status == http.StatusOK {
		must(t, json.Unmarshal([]byte(body), &s))
	}
	return status, s
}

// TestOverviewSummary: one request answers every card and chart, with the
// caller's token sent to the services and not to Prometheus; a second
// request of the same user within the cache's time reaches no service, one
// of another user does; a service down is its part's 502 while the others
// stand; bad input is 400, no token 401, a write 405.
func TestOverviewSummary(t *testing.T) {
	t.Parallel()
	routes := overviewRoutes()
	srv, s := fanoutSetup(t, routes)
	tok := token(t)
	status, sum := getSummary(t, srv.URL+"/api/overview?range=7d", tok)
	if status != http.StatusOK {
		t.Fatalf("summary = %d", status)
	}
	for name, p := range map[string]bool{"stats": sum.Stats.OK, "dlq": sum.DLQ.OK, "outbox": sum.Outbox.OK, "classified": sum.Classified.OK,
		"metrics": sum.Metrics.OK, "history": sum.History.OK, "throughput": sum.Throughput.OK} {
		if !p {
			t.Errorf("part %s not ok: %+v", name, sum)
		}
	}
	if sum.Range != "7d" {
		t.Errorf("range = %q", sum.Range)
	}
	var m struct{ QueueDepth, ActiveWorkers float64 }
	must(t, json.Unmarshal(bytes.ReplaceAll(sum.Metrics.Data, []byte("_"), nil), &m))
	if m.QueueDepth != 7 || m.ActiveWorkers != 2 {
		t.Errorf("metrics = %s, want queue 7, workers 2", sum.Metrics.Data)
	}
	var h struct {
		Start, End, Step   int64
		Queue, DLQ, Outbox []any
	}
	must(t, json.Unmarshal(sum.History.Data, &h))
	if h.End-h.Start != 7*24*3600 || h.Step != 5040 || len(h.Queue) != 1 {
		t.Errorf("history = %s, want a week in 5040 s steps", sum.History.Data)
	}
	if got := s.count("prometheus /api/v1/query_range"); got != 3 {
		t.Errorf("range queries = %d, want 3", got)
	}
	s.mu.Lock()
	if s.auth["classifier"] != "Bearer "+tok || s.auth["prometheus"] != "" {
		t.Errorf("authorization sent: classifier %q, Prometheus %q; want the token to the services only", s.auth["classifier"], s.auth["prometheus"])
	}
	s.mu.Unlock()

	before := s.total()
	if status, _ := getSummary(t, srv.URL+"/api/overview?range=7d", tok); status != http.StatusOK || s.total() != before {
		t.Errorf("a second summary within the cache's time = %d and reached the services %d times, want 200 from the cache", status, s.total()-before)
	}
	if status, _ := getSummary(t, srv.URL+"/api/overview?range=7d&fresh=1", tok); status != http.StatusOK || s.total() == before {
		t.Errorf("fresh=1 = %d and reached no service, want an answer from the services", status)
	}
	before = s.total()
	if status, _ := getSummary(t, srv.URL+"/api/overview?range=7d", issueFor(t, "someone-else")); status != http.StatusOK || s.total() == before {
		t.Errorf("another user's summary = %d and reached no service, want its own", status)
	}

	// The publisher down: its part says so, the others stand.
	s.mu.Lock()
	s.routes["publisher /api/v1/outbox/stats"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"code":"database_unavailable","message":"down"}}`)
	}
	s.mu.Unlock()
	_, sum = getSummary(t, srv.URL+"/api/overview?range=1h", tok)
	if sum.Outbox.OK || sum.Outbox.Status != http.StatusServiceUnavailable || sum.Outbox.Error == nil || sum.Outbox.Error.Code != "database_unavailable" || !sum.Stats.OK {
		t.Errorf("publisher down: outbox %+v, stats ok %v; want the publisher's 503 and the rest", sum.Outbox, sum.Stats.OK)
	}

	for _, c := range []struct {
		path, tok string
		method    string
		want      int
	}{
		{"/api/overview?range=2y", tok, "GET", 400},
		{"/api/overview?range=", tok, "GET", 400},
		{"/api/overview?fresh=yes", tok, "GET", 400},
		{"/api/overview", "", "GET", 401},
		{"/api/overview", tok, "POST", 405},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		if c.tok != "" {
			req.Header.Set("Authorization", "Bearer "+c.tok)
		}
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("%s %s = %d, want %d", c.method, c.path, res.StatusCode, c.want)
		}
	}
}

// TestFindOneRequest: neither the outbox nor the queue knows the id, so
// the server asks every raw index (not the browser), then the holder's
// classified twin: one browser request, whatever the number of sources.
func TestFindOneRequest(t *testing.T) {
	t.Parallel()
	empty := jsonAnswer(map[string]any{"entries": []any{}})
	routes := map[string]http.HandlerFunc{
		"publisher /api/v1/outbox": empty,
		"classifier /api/v1/dlq":   empty,
		"index-manager /api/v1/indices": jsonAnswer(map[string]any{"indices": []any{
			map[string]string{"name": "a_raw_content"}, map[string]string{"name": "b_raw_content"}, map[string]string{"name": "c_raw_content"},
		}}),
		"index-manager /api/v1/indices/b_raw_content/documents/doc-1":        jsonAnswer(map[string]any{"id": "doc-1"}),
		"index-manager /api/v1/indices/b_classified_content/documents/doc-1": jsonAnswer(map[string]any{"id": "doc-1"}),
	}
	srv, s := fanoutSetup(t, routes)
	tok := token(t)
	status, _, body := get(t, srv.URL+"/api/find?id=doc-1", "Authorization", "Bearer "+tok)
	var a struct {
		Indices  []struct{ Index, Kind string }
		Failures []struct{ Service, Message string }
	}
	must(t, json.Unmarshal([]byte(body), &a))
	if status != http.StatusOK || len(a.Failures) != 0 || fmt.Sprint(a.Indices) != "[{b_raw_content raw} {b_classified_content classified}]" {
		t.Errorf("find = %d %s, want b's raw and classified", status, body)
	}
	for _, raw := range []string{"a", "b", "c"} {
		if n := s.count("index-manager /api/v1/indices/" + raw + "_raw_content/documents/doc-1"); n != 1 {
			t.Errorf("%s_raw_content asked %d times, want once", raw, n)
		}
	}
	for _, bad := range []string{"", "id=", "id=%20", "id=a%00b", "id=" + strings.Repeat("x", 513)} {
		if status, _, body := get(t, srv.URL+"/api/find?"+bad, "Authorization", "Bearer "+tok); status != http.StatusBadRequest {
			t.Errorf("find ?%.20s = %d %s, want 400", bad, status, body)
		}
	}
}

// TestSourcePriorities: every named source's mark in one answer, a source
// the classifier fails for in failures; bad names and too many are 400.
func TestSourcePriorities(t *testing.T) {
	t.Parallel()
	routes := map[string]http.HandlerFunc{
		"classifier /api/v1/sources/a/priority": jsonAnswer(map[string]string{"source": "a", "priority": "high"}),
		"classifier /api/v1/sources/b/priority": jsonAnswer(map[string]string{"source": "b", "priority": "low"}),
	}
	srv, s := fanoutSetup(t, routes)
	tok := token(t)
	status, _, body := get(t, srv.URL+"/api/sources/priorities?source=a&source=b&source=c&source=a", "Authorization", "Bearer "+tok)
	var a struct {
		Priorities map[string]struct{ Priority string }
		Failures   map[string]struct{ Code string }
	}
	must(t, json.Unmarshal([]byte(body), &a))
	if status != http.StatusOK || a.Priorities["a"].Priority != "high" || a.Priorities["b"].Priority != "low" || a.Failures["c"].Code != "not_found" || len(a.Priorities) != 2 {
		t.Errorf("priorities = %d %s", status, body)
	}
	if n := s.count("classifier /api/v1/sources/a/priority"); n != 1 {
		t.Errorf("a repeated source was asked %d times, want once", n)
	}
	many := strings.Repeat("source=x&", 301)
	for _, bad := range []string{"source=", "source=A", "source=..%2Fx", many} {
		if status, _, body := get(t, srv.URL+"/api/sources/priorities?"+bad, "Authorization", "Bearer "+tok); status != http.StatusBadRequest {
			t.Errorf("priorities ?%.30s = %d %s, want 400", bad, status, body)
		}
	}
}

// TestAPIJSONCompressed: the proxied services' JSON and the server's own
// go gzip-compressed to a client that accepts gzip, plain to one that does
// not or refuses it (q=0).
func TestAPIJSONCompressed(t *testing.T) {
	t.Parallel()
	rows := make([]map[string]any, 200)
	for i := range rows {
		rows[i] = map[string]any{"id": fmt.Sprintf("row-%d", i), "content_id": fmt.Sprintf("doc-%d", i), "status": "published",
			"channel": "articles:crime", "title": "A title of some length for an outbox row", "topics": []string{"crime", "news"}}
	}
	srv, _ := fanoutSetup(t, map[string]http.HandlerFunc{"publisher /api/v1/outbox": jsonAnswer(map[string]any{"entries": rows})})
	tok := token(t)
	fetch := func(path, encoding string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		// A transport of its own: the default one would decompress.
		res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		must(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	plainRes, plain := fetch("/api/publisher/api/v1/outbox", "")
	gzRes, packed := fetch("/api/publisher/api/v1/outbox", "gzip, deflate, br")
	if plainRes.Header.Get("Content-Encoding") != "" || gzRes.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(gzRes.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("encodings: plain %q, gzip %q (Vary %q)", plainRes.Header.Get("Content-Encoding"), gzRes.Header.Get("Content-Encoding"), gzRes.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	must(t, err)
	unpacked, err := io.ReadAll(zr)
	must(t, err)
	if !bytes.Equal(unpacked, plain) {
		t.Fatalf("the gzip answer does not decompress to the plain one")
	}
	if len(packed)*4 > len(plain) {
		t.Errorf("200 outbox rows: %d bytes plain, %d gzip; want at most a quarter", len(plain), len(packed))
	}
	t.Logf("200 outbox rows: %d bytes of JSON, %d gzip-compressed", len(plain), len(packed))
	if res, _ := fetch("/api/overview", "gzip;q=0"); res.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got %q", res.Header.Get("Content-Encoding"))
	}
}

// TestOverviewRangeAndSource: the picked range moves every panel (the
// attempts' window and round buckets, the classified count, the
// throughput's window) and a source narrows the per-source parts; a
// source name that is not one is 400 before any service is asked.
func TestOverviewRangeAndSource(t *testing.T) {
	t.Parallel()
	routes := overviewRoutes()
	var mu sync.Mutex
	asked := map[string][]string{}
	record := func(key string, next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			asked[key] = append(asked[key], r.URL.Query().Encode())
			mu.Unlock()
			next(w, r)
		}
	}
	for _, key := range []string{"classifier /api/v1/stats", "index-manager /api/v1/content/_count", "prometheus /api/v1/query"} {
		routes[key] = record(key, routes[key])
	}
	srv, _ := fanoutSetup(t, routes)
	tok := token(t)
	status, _, body := get(t, srv.URL+"/api/overview?range=7d&source=metro", "Authorization", "Bearer "+tok)
	var sum struct {
		Range, Source string
		Bucket        int64 `json:"bucket_seconds"`
	}
	must(t, json.Unmarshal([]byte(body), &sum))
	if status != http.StatusOK || sum.Range != "7d" || sum.Source != "metro" || sum.Bucket != 7200 {
		t.Fatalf("summary = %d %s, want 7d of metro in 2 h buckets", status, body)
	}
	mu.Lock()
	if got := fmt.Sprint(asked["classifier /api/v1/stats"]); got != "[interval=7200s&source=metro&window=604800s]" {
		t.Errorf("stats asked %s, want a week of metro in 2 h buckets", got)
	}
	if got := fmt.Sprint(asked["index-manager /api/v1/content/_count"]); got != "[field=classified_at&gte=now-7d&index_type=classified_content&prefix=metro_classified_content]" {
		t.Errorf("count asked %s, want metro's classified index over the week", got)
	}
	for _, q := range asked["prometheus /api/v1/query"] {
		if !strings.Contains(q, "offset+7d") || !strings.Contains(q, "%5B7d%5D") || !strings.Contains(q, "%2F+10080") ||
			!strings.Contains(q, "source%3D%22metro%22") {
			t.Errorf("throughput asked %s, want metro over 7d per minute", q)
		}
	}
	if n := len(asked["prometheus /api/v1/query"]); n != 2 {
		t.Errorf("throughput queries = %d, want 2", n)
	}
	before := len(asked["classifier /api/v1/stats"])
	mu.Unlock()
	for _, bad := range []string{"Metro", "a\"b", "a}b", "-x", strings.Repeat("s", 181), "a%20b"} {
		if status, _, body := get(t, srv.URL+"/api/overview?source="+bad, "Authorization", "Bearer "+tok); status != http.StatusBadRequest ||
			!strings.Contains(body, "invalid_source") {
			t.Errorf("source %q = %d %s, want 400 invalid_source", bad, status, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked["classifier /api/v1/stats"]) != before {
		t.Errorf("a refused source reached the classifier")
	}
}
