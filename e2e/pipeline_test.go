package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// message is the body the publisher sends (ToPublishMessage).
type message struct {
	ID               string   `json:"id"`
	Source           string   `json:"source"`
	Index            string   `json:"index"`
	ContentType      string   `json:"content_type"`
	Topics           []string `json:"topics"`
	QualityScore     *int     `json:"quality_score"`
	IsCrimeRelated   *bool    `json:"is_crime_related"`
	CrimeSubcategory *string  `json:"crime_subcategory"`
	Title            string   `json:"title"`
	Body             string   `json:"body"`
	URL              string   `json:"url"`
	PublishedDate    *string  `json:"published_date"`
	Version          int      `json:"version"`
	ChangedFields    []string `json:"changed_fields"`
	CanonicalURL     *string  `json:"canonical_url"`
	DuplicateOf      *struct {
		Index string `json:"index"`
		ID    string `json:"id"`
		Kind  string `json:"kind"`
	} `json:"duplicate_of"`
	Publisher struct {
		OutboxID    string `json:"outbox_id"`
		PublishedAt string `json:"published_at"`
		Channel     string `json:"channel"`
	} `json:"publisher"`
}

// TestPipelineDeliversEveryDocumentOnce runs loader -> classifier -> outbox
// -> publisher -> Redis with the real binaries and real services, and checks
// that every loaded document arrives exactly once, with the spec's fields,
// on the channel its classification routes it to.
func TestPipelineDeliversEveryDocumentOnce(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	rdb := testenv.Redis(t)
	esURL := testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch")
	esTarget, err := url.Parse(esURL)
	if err != nil {
		t.Fatal(err)
	}
	// The classifier reaches Elasticsearch through a relay the test can cut.
	esRelay := newRelay(t, esTarget.Host)

	pipe := startPipeline(t, prefix, "e2e-"+prefix, map[string]map[string]string{
		"classifier": {"ELASTICSEARCH_URL": "http://" + esRelay.addr},
	})
	classifier, publisher, indexManager := pipe.classifier, pipe.publisher, pipe.indexManager

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sub := rdb.PSubscribe(ctx, "articles:*", "content:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // subscription confirmed before loading
		t.Fatalf("psubscribe: %v", err)
	}
	msgs := sub.Channel()

	const count = 60
	sources := prefix + "_metro," + prefix + "_sports"
	runLoader(t, nil, "-count", "60", "-sources", sources, "-seed", "7", "-refresh")
	loaded := rawDocuments(t, es, prefix)
	if len(loaded) != count {
		t.Fatalf("loader wrote %d documents, want %d", len(loaded), count)
	}

	received := map[string][]message{}
	deadline := time.After(90 * time.Second)
	for len(received) < count {
		select {
		case m := <-msgs:
			var body message
			if err := json.Unmarshal([]byte(m.Payload), &body); err != nil {
				t.Fatalf("message on %s is not JSON: %v: %s", m.Channel, err, m.Payload)
			}
			if !strings.HasPrefix(body.Source, prefix) {
				continue // another test's document
			}
			if body.Publisher.Channel != m.Channel {
				t.Errorf("message %s says channel %q but arrived on %q", body.ID, body.Publisher.Channel, m.Channel)
			}
			received[body.ID] = append(received[body.ID], body)
		case <-deadline:
			t.Fatalf("received %d of %d documents within 90s\nclassifier:\n%s\npublisher:\n%s",
				len(received), count, classifier.log.Tail(20), publisher.log.Tail(20))
		}
	}
	// Anything published twice would arrive right behind the first copy.
	drain := time.After(2 * time.Second)
collect:
	for {
		select {
		case m := <-msgs:
			var body message
			if json.Unmarshal([]byte(m.Payload), &body) == nil && strings.HasPrefix(body.Source, prefix) {
				received[body.ID] = append(received[body.ID], body)
			}
		case <-drain:
			break collect
		}
	}

	for id, raw := range loaded {
		got := received[id]
		if len(got) != 1 {
			t.Errorf("document %s arrived %d times, want exactly once", id, len(got))
			continue
		}
		checkMessage(t, raw, got[0])
	}

	// The commit point is reached for every document. The status flip is
	// the commit's last step, after the outbox row is committed, so the
	// publisher may deliver a document before its flip lands: wait for the
	// flips rather than reading them once.
	var statuses map[string]string
	flipped := func() bool {
		statuses = rawStatuses(t, es, prefix)
		for _, status := range statuses {
			if status != contentindex.StatusClassified {
				return false
			}
		}
		return len(statuses) == count
	}
	for deadline := testenv.GiveUpAt(t, 60*time.Second); !flipped() && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
	}
	if !flipped() {
		for id, status := range statuses {
			if status != contentindex.StatusClassified {
				t.Errorf("raw document %s is %q, want classified", id, status)
			}
		}
		t.Logf("classifier:\n%s", classifier.log.Tail(40))
	}
	assertCount(t, pipe.classifierDB, `SELECT COUNT(DISTINCT content_id) FROM classification_history`, count)
	assertCount(t, pipe.publisherDB, `SELECT COUNT(*) FROM classified_outbox WHERE status = 'published'`, count)

	// Every metric the original design named is on /metrics under its exact name. The
	// outbox metrics come from the publisher, which owns the outbox table
	// (the classifier may only insert into it). classifier_dlq_depth has a
	// series per source with entries, so it is absent while the DLQ is empty.
	_, classifierMetrics := classifier.get(t, "/metrics")
	for _, name := range []string{
		"classifier_documents_processed_total", "classifier_documents_failed_total", "classifier_documents_retried_total",
		"classifier_processing_duration_seconds_bucket", "classifier_batch_size_bucket",
		"classifier_rule_match_duration_seconds_bucket", "classifier_rules_evaluated_total", "classifier_rules_matched_total",
		"classifier_queue_depth", "classifier_active_workers", "classifier_work_dropped_total", "classifier_throttle_count_total",
		"classifier_poller_lag_seconds_bucket", "classifier_classification_lag_seconds_bucket",
		"classifier_dlq_enqueued_total", "classifier_dlq_processed_total", "classifier_dlq_exhausted_total",
	} {
		if !hasMetric(classifierMetrics, name) {
			t.Errorf("classifier /metrics lacks %s", name)
		}
	}
	_, publisherMetrics := publisher.get(t, "/metrics")
	for _, name := range []string{"classifier_outbox_backlog", "classifier_outbox_published_total", "classifier_outbox_publish_lag_seconds_bucket"} {
		if !hasMetric(publisherMetrics, name) {
			t.Errorf("publisher /metrics lacks %s", name)
		}
	}

	// The index-manager lists the test's raw and classified indices with
	// their document counts.
	indices := listIndices(t, indexManager, prefix, 4, count/2)
	for _, source := range strings.Split(sources, ",") {
		for _, name := range []string{contentindex.RawIndex(source), contentindex.ClassifiedIndex(source)} {
			if n, ok := indices[name]; !ok || n != count/2 {
				t.Errorf("index-manager lists %s with %d documents (present %t), want %d", name, n, ok, count/2)
			}
		}
	}

	// /ready names Elasticsearch while it is unreachable, and recovers.
	esRelay.cut()
	waitFor(t, 15*time.Second, "classifier /ready to answer 503 naming elasticsearch", func() bool {
		status, body := classifier.get(t, "/ready")
		return status == 503 && strings.Contains(body, `"failing":["elasticsearch"]`)
	})
	if err := esRelay.open(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "classifier /ready to answer 200 again", func() bool {
		status, _ := classifier.get(t, "/ready")
		return status == 200
	})
}

func checkMessage(t *testing.T, raw contentindex.RawDocument, m message) {
	t.Helper()
	if m.Source != raw.SourceName || m.URL != raw.URL || m.Title != raw.Title || m.Body != raw.RawText {
		t.Errorf("%s: source/url/title/body do not match the raw document: %+v", raw.ID, m)
	}
	if m.Index != contentindex.ClassifiedIndex(raw.SourceName) {
		t.Errorf("%s: index = %q, want %q", raw.ID, m.Index, contentindex.ClassifiedIndex(raw.SourceName))
	}
	if m.QualityScore == nil || *m.QualityScore < 0 || *m.QualityScore > 100 {
		t.Errorf("%s: quality_score = %v, want 0..100", raw.ID, m.QualityScore)
	}
	if m.IsCrimeRelated == nil || m.Topics == nil || m.ContentType == "" || m.PublishedDate == nil {
		t.Errorf("%s: missing is_crime_related, topics, content_type or published_date: %+v", raw.ID, m)
	}
	if _, err := time.Parse(time.RFC3339, m.Publisher.PublishedAt); err != nil || m.Publisher.OutboxID == "" {
		t.Errorf("%s: publisher block incomplete: %+v", raw.ID, m.Publisher)
	}
	want := expectedChannel(m)
	if m.Publisher.Channel != want {
		t.Errorf("%s: channel %q, want %q for crime=%v sub=%v type=%s", raw.ID, m.Publisher.Channel, want,
			*m.IsCrimeRelated, m.CrimeSubcategory, m.ContentType)
	}
	// The loader's crime stories must be routed as crime.
	if strings.Contains(raw.Title, "murder") && !strings.HasPrefix(m.Publisher.Channel, "articles:crime") {
		t.Errorf("%s: a murder story went to %s", raw.ID, m.Publisher.Channel)
	}
}

// expectedChannel is the publisher's RoutingKey, restated independently.
func expectedChannel(m message) string {
	switch {
	case *m.IsCrimeRelated && m.CrimeSubcategory != nil:
		return "articles:crime:" + *m.CrimeSubcategory
	case *m.IsCrimeRelated:
		return "articles:crime"
	case m.ContentType == "article":
		return "articles:news"
	case m.ContentType == "video":
		return "content:video"
	case m.ContentType == "image":
		return "content:image"
	default:
		return "content:other"
	}
}

func assertCount(t *testing.T, dsn, query string, want int) {
	t.Helper()
	var got int
	queryRow(t, dsn, query, query, &got)
	if got != want {
		t.Errorf("%s = %d, want %d", query, got, want)
	}
}

// waitFor polls ok every 200ms (each poll is an HTTP or Elasticsearch
// request) until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	testenv.WaitFor(t, timeout, 200*time.Millisecond, what, ok)
}

type searchHits struct {
	Hits struct {
		Hits []struct {
			Source contentindex.RawDocument `json:"_source"`
		} `json:"hits"`
	} `json:"hits"`
}

func rawDocuments(t *testing.T, es esSearcher, prefix string) map[string]contentindex.RawDocument {
	t.Helper()
	var parsed searchHits
	search(t, es, prefix, &parsed)
	out := map[string]contentindex.RawDocument{}
	for _, h := range parsed.Hits.Hits {
		out[h.Source.ID] = h.Source
	}
	return out
}

func rawStatuses(t *testing.T, es esSearcher, prefix string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, d := range rawDocuments(t, es, prefix) {
		out[id] = d.ClassificationStatus
	}
	return out
}

// hasMetric reports whether a Prometheus text exposition has a sample of
// the metric name (with or without labels).
func hasMetric(exposition, name string) bool {
	for _, line := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			return true
		}
	}
	return false
}

// listIndices asks the index-manager's API for the indices under prefix and
// returns their document counts, polling (counts follow Elasticsearch's
// refresh) until n indices of want documents each are listed or 15 s pass.
func listIndices(t *testing.T, p *process, prefix string, n int, want int64) map[string]int64 {
	t.Helper()
	token := authtest.EnvToken(t, "e2e@example.org", auth.RoleOperator)
	out := map[string]int64{}
	settled := func() bool {
		if len(out) != n {
			return false
		}
		for _, c := range out {
			if c != want {
				return false
			}
		}
		return true
	}
	for deadline := testenv.GiveUpAt(t, 15*time.Second); time.Now().Before(deadline) && !settled(); time.Sleep(200 * time.Millisecond) {
		func() {
			req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/api/v1/indices?prefix="+prefix, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer res.Body.Close()
			var list struct {
				Indices []struct {
					Name     string `json:"name"`
					DocCount int64  `json:"doc_count"`
				} `json:"indices"`
			}
			if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&list) != nil {
				return
			}
			clear(out)
			for _, i := range list.Indices {
				out[i.Name] = i.DocCount
			}
		}()
	}
	return out
}
