package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/testenv"
)

// fileSpan is one span as the OpenTelemetry stdout exporter writes it to
// OTEL_TRACES_FILE.
type fileSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Links       []spanLink
	StartTime   time.Time
	EndTime     time.Time
	Service     string `json:"-"`
}

// spanLink is a link of a fileSpan to another span.
type spanLink struct {
	SpanContext struct{ TraceID, SpanID string }
}

// TestTraceFollowsDocumentToRedis classifies one document with the real
// binaries, each writing its spans to OTEL_TRACES_FILE, and follows its
// trace, which begins when the poller claims it: the classifier's claim
// span for the document, its classify span and its outbox row span (whose
// traceparent the outbox row carries, linked to the batch's insert span),
// the publisher's publish span continuing it, the traceparent field of the
// Redis message, and a consumer's call to the index-manager carrying that
// field (its HTTP server span and its Elasticsearch span). The trace is
// logged, span by span, with durations.
func TestTraceFollowsDocumentToRedis(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	rdb := testenv.Redis(t)
	dir := t.TempDir()
	files := map[string]string{}
	for _, s := range []string{"classifier", "publisher", "index-manager"} {
		files[s] = filepath.Join(dir, s+".json")
	}

	pipe := startPipeline(t, prefix, "e2e-"+prefix, map[string]map[string]string{
		"publisher":     {"OTEL_TRACES_FILE": files["publisher"]},
		"classifier":    {"OTEL_TRACES_FILE": files["classifier"]},
		"index-manager": {"OTEL_TRACES_FILE": files["index-manager"]},
	})
	classifier, publisher, indexManager := pipe.classifier, pipe.publisher, pipe.indexManager

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sub := rdb.PSubscribe(ctx, "articles:*", "content:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("psubscribe: %v", err)
	}
	runLoader(t, nil, "-count", "1", "-sources", prefix+"_traced", "-seed", "7", "-refresh")
	if n := len(rawDocuments(t, es, prefix)); n != 1 {
		t.Fatalf("loader wrote %d documents, want 1", n)
	}

	var msg struct {
		ID          string `json:"id"`
		Source      string `json:"source"`
		Index       string `json:"index"`
		Traceparent string `json:"traceparent"`
	}
	for msg.ID == "" {
		select {
		case m := <-sub.Channel():
			if json.Unmarshal([]byte(m.Payload), &msg) != nil || !strings.HasPrefix(msg.Source, prefix) {
				msg.ID = "" // another test's message
			}
		case <-ctx.Done():
			t.Fatalf("no message for the document\nclassifier:\n%s\npublisher:\n%s", classifier.log.Tail(20), publisher.log.Tail(20))
		}
	}
	traceID, publishSpanID := traceparentIDs(t, "the Redis message", msg.Traceparent)

	admin, err := sql.Open("postgres", pipe.publisherDB)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var rowTraceparent sql.NullString
	if err := admin.QueryRowContext(ctx, `SELECT traceparent FROM classified_outbox WHERE content_id = $1`, msg.ID).Scan(&rowTraceparent); err != nil {
		t.Fatalf("outbox row of %s: %v", msg.ID, err)
	}
	rowTraceID, rowSpanID := traceparentIDs(t, "the outbox row", rowTraceparent.String)
	if rowTraceID != traceID {
		t.Errorf("outbox row's trace %s, message's %s: want one trace", rowTraceID, traceID)
	}

	// A consumer of the message looks the document up in the index-manager,
	// continuing the trace the message names.
	consumerLookup(t, indexManager, msg.Index, msg.ID, msg.Traceparent)

	for _, p := range []*process{classifier, publisher, indexManager} {
		stopAndWait(t, p) // flushes each service's spans to its file
	}
	var all []fileSpan
	for service, path := range files {
		all = append(all, readSpans(t, service, path)...)
	}
	var trace []fileSpan
	for _, s := range all {
		if s.SpanContext.TraceID == traceID {
			trace = append(trace, s)
		}
	}
	logTrace(t, trace)

	find := func(service, name, parent string) *fileSpan {
		for i, s := range trace {
			if s.Service == service && s.Name == name && (parent == "" || s.Parent.SpanID == parent) {
				return &trace[i]
			}
		}
		return nil
	}
	// expect returns the span of service named name under parent, checking
	// that it is the span id (when given) that carrier names.
	expect := func(service, name, parent, id, carrier string) *fileSpan {
		s := find(service, name, parent)
		switch {
		case s == nil:
			t.Errorf("the trace has no %s span of the %s under span %q", name, service, parent)
		case id != "" && s.SpanContext.SpanID != id:
			t.Errorf("%s names span %s, the %s span is %s", carrier, id, name, s.SpanContext.SpanID)
		}
		return s
	}
	if claim := expect("classifier", "classifier.claim.document", "", "", ""); claim != nil {
		expect("classifier", "classifier.classify", claim.SpanContext.SpanID, "", "")
		row := expect("classifier", "classifier.outbox.row", claim.SpanContext.SpanID, rowSpanID, "the outbox row's traceparent")
		// The row links to the batch's insert, a span of the commit's trace.
		if row != nil {
			insert := slices.IndexFunc(all, func(s fileSpan) bool {
				return s.Name == "classifier.outbox.write" && slices.ContainsFunc(row.Links, func(l spanLink) bool {
					return l.SpanContext.SpanID == s.SpanContext.SpanID
				})
			})
			if insert < 0 {
				t.Errorf("the outbox row span links to no classifier.outbox.write span: %+v", row.Links)
			}
		}
	}
	expect("publisher", "publisher.publish", rowSpanID, publishSpanID, "the message's traceparent")
	if lookup := expect("index-manager", "GET /api/v1/indices/:name/documents/:id", publishSpanID, "", ""); lookup != nil {
		expect("index-manager", "elasticsearch get document", lookup.SpanContext.SpanID, "", "")
	}

	// The batch's spans (poll, claim, commit, outbox insert) and the
	// classifier's own HTTP spans (its /ready) exist, each batch's in a
	// trace of its own.
	for _, name := range []string{"classifier.claim", "classifier.commit", "classifier.outbox.write", "GET /ready"} {
		if !slices.ContainsFunc(all, func(s fileSpan) bool { return s.Service == "classifier" && s.Name == name }) {
			t.Errorf("the classifier wrote no %s span", name)
		}
	}
}

// traceparentIDs returns the trace and span ids of a W3C traceparent.
func traceparentIDs(t *testing.T, what, tp string) (traceID, spanID string) {
	t.Helper()
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 {
		t.Fatalf("%s's traceparent = %q, want 00-<trace id>-<span id>-<flags>", what, tp)
	}
	return parts[1], parts[2]
}

// consumerLookup reads one classified document from the index-manager with
// a traceparent header, as a consumer of the Redis message would.
func consumerLookup(t *testing.T, p *process, index, id, traceparent string) {
	t.Helper()
	token := apiToken(t)
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/api/v1/indices/"+index+"/documents/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("traceparent", traceparent)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET document %s/%s: %d %s", index, id, res.StatusCode, body)
	}
}

// stopAndWait stops a service now (SIGTERM) and waits for its exit, so its
// telemetry is flushed; the exit is handed back for startService's cleanup.
func stopAndWait(t *testing.T, p *process) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("stop %s: %v", p.name, err)
	}
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30s of SIGTERM\n%s", p.name, p.log.Tail(40))
	}
}

// readSpans reads the spans a service wrote to its traces file.
func readSpans(t *testing.T, service, path string) []fileSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%s traces file: %v", service, err)
	}
	defer f.Close()
	var out []fileSpan
	dec := json.NewDecoder(f)
	for {
		var s fileSpan
		if err := dec.Decode(&s); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s traces file: %v", service, err)
		}
		s.Service = service
		out = append(out, s)
	}
}

// logTrace logs a trace's spans in start order, indented under their
// parents, with their services and durations.
func logTrace(t *testing.T, spans []fileSpan) {
	t.Helper()
	slices.SortFunc(spans, func(a, b fileSpan) int { return a.StartTime.Compare(b.StartTime) })
	depth := map[string]int{}
	var b strings.Builder
	for _, s := range spans {
		d := 0
		if pd, ok := depth[s.Parent.SpanID]; ok {
			d = pd + 1
		}
		depth[s.SpanContext.SpanID] = d
		start := s.StartTime.Sub(spans[0].StartTime)
		b.WriteString(strings.Repeat("  ", d) + s.Name + "  [" + s.Service + "]  +" + start.Round(time.Microsecond).String() +
			"  " + s.EndTime.Sub(s.StartTime).Round(time.Microsecond).String() + "\n")
	}
	if len(spans) > 0 {
		t.Logf("trace %s, %d spans (name [service] +start duration):\n%s", spans[0].SpanContext.TraceID, len(spans), b.String())
	}
}
