package labels_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/labels"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

type bundle struct {
	router *gin.Engine
	store  *labels.Store
	raw    string // the raw index whose classified twin holds the documents
}

// doc is a classified document as the pipeline writes the fields the
// labelling loop reads.
func doc(id, title, primary string, confidence float64, topics []string, disputed bool) map[string]any {
	d := map[string]any{"id": id, "title": title, "raw_text": "The text of " + title + ".", "topics": topics,
		"classified_at": time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	if primary != "" {
		d["primary_topic"], d["primary_topic_confidence"] = primary, confidence
	}
	if disputed {
		d["topic_disputed"] = true
	}
	return d
}

func setup(t *testing.T) bundle {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	db, _ := dbtest.Migrated(t)
	raw := prefix + "news" + contentindex.RawSuffix
	classified := contentindex.ClassifiedIndexFor(raw)
	ctx := testenv.Context(t)
	if err := contentindex.CreateIndex(ctx, es, classified); err != nil {
		t.Fatal(err)
	}
	rawtest.WriteJSON(t, es, classified,
		doc("none", "Nothing known", "", 0, []string{}, false),
		doc("low", "Half sure", "sports", 0.4, []string{"sports"}, false),
		doc("disputed", "Rules say otherwise", "business", 0.9, []string{"business"}, true),
		doc("sure", "Certain", "sports", 0.97, []string{"sports"}, false),
	)
	finder, err := labels.NewFinder(labels.FinderConfig{ES: es, Pattern: prefix + "*" + contentindex.ClassifiedSuffix})
	if err != nil {
		t.Fatal(err)
	}
	store := labels.NewStore(db)
	gin.SetMode(gin.TestMode)
	r := gin.New()
	if err := labels.Register(r.Group("/api/v1"), labels.Deps{Store: store, Finder: finder, Logger: testenv.Logger(t),
		Topics: func() []string { return []string{"sports", "business", "sports"} }}); err != nil {
		t.Fatal(err)
	}
	return bundle{router: r, store: store, raw: raw}
}

func (b bundle) do(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	} else {
		rd = bytes.NewReader(nil)
	}
	req := httptest.NewRequestWithContext(t.Context(), method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	b.router.ServeHTTP(w, req)
	return w.Code, w.Body.Bytes()
}

func candidateIDs(t *testing.T, b bundle) ([]string, []string) {
	t.Helper()
	code, body := b.do(t, http.MethodGet, "/api/v1/labels/candidates", nil)
	if code != http.StatusOK {
		t.Fatalf("candidates: %d %s", code, body)
	}
	var out struct {
		Candidates []labels.Candidate `json:"candidates"`
		Topics     []string           `json:"topics_available"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range out.Candidates {
		ids = append(ids, c.ID+":"+c.Reason)
		if c.Index != b.raw {
			t.Errorf("candidate %s: index %q, want the raw index %q", c.ID, c.Index, b.raw)
		}
	}
	return ids, out.Topics
}

// The loop: documents without a topic, with a low confidence or disputed
// are offered, the least certain first; a label takes one out of the queue
// and is counted, measured and exported.
func TestLabellingLoop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids, topics := candidateIDs(t, b)
	if strings.Join(ids, ",") != "none:no_topic,low:low_confidence,disputed:disputed" || strings.Join(topics, ",") != "business,sports" {
		t.Fatalf("candidates %v, topics %v", ids, topics)
	}

	code, body := b.do(t, http.MethodPost, "/api/v1/labels", map[string]string{"index": b.raw, "id": "low", "label": "business"})
	if code != http.StatusCreated {
		t.Fatalf("label: %d %s", code, body)
	}
	var l labels.Label
	_ = json.Unmarshal(body, &l)
	if l.Label != "business" || l.PredictedTopic != "sports" || l.PredictedConfidence < 0.39 || l.Title != "Half sure" {
		t.Errorf("label %+v", l)
	}
	if code, _ := b.do(t, http.MethodPost, "/api/v1/labels", map[string]string{"index": b.raw, "id": "none", "label": "sports"}); code != http.StatusCreated {
		t.Fatalf("second label: %d", code)
	}
	if ids, _ := candidateIDs(t, b); strings.Join(ids, ",") != "disputed:disputed" {
		t.Errorf("candidates after two labels: %v", ids)
	}
	// A relabel replaces the label and keeps the prediction.
	code, body = b.do(t, http.MethodPost, "/api/v1/labels", map[string]string{"index": b.raw, "id": "low", "label": "sports"})
	if code != http.StatusOK {
		t.Fatalf("relabel: %d %s", code, body)
	}

	code, body = b.do(t, http.MethodGet, "/api/v1/labels", nil)
	var list labels.Listing
	_ = json.Unmarshal(body, &list)
	if code != http.StatusOK || list.Total != 2 || list.PerLabel["sports"] != 2 || len(list.Labels) != 2 {
		t.Errorf("list: %d %+v", code, list)
	}

	code, body = b.do(t, http.MethodGet, "/api/v1/labels/stats", nil)
	var st labels.Stats
	_ = json.Unmarshal(body, &st)
	// "low": predicted sports, labelled sports; "none": predicted none,
	// labelled sports. Sports: precision 1/1, recall 1/2.
	if code != http.StatusOK || st.Labelled != 2 || st.Confusion["sports"]["sports"] != 1 || st.Confusion["sports"][labels.NoTopic] != 1 ||
		len(st.Topics) != 1 || st.Topics[0].Precision != 1 || st.Topics[0].Recall != 0.5 || len(st.Weeks) != 1 || st.Weeks[0].Correct != 1 {
		t.Errorf("stats: %d %+v", code, st)
	}

	code, body = b.do(t, http.MethodGet, "/api/v1/labels/export", nil)
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if code != http.StatusOK || len(lines) != 2 || !strings.Contains(lines[0], `"label":"sports"`) || !strings.Contains(lines[0], `"text":"The text of Half sure."`) {
		t.Errorf("export: %d %q", code, lines)
	}
	ex, err := b.store.Examples(t.Context())
	if err != nil || len(ex) != 2 || ex[0].Label != "sports" || ex[0].Title != "Half sure" {
		t.Errorf("examples %+v %v", ex, err)
	}

	if code, _ := b.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/labels/%d", l.ID), nil); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
	if code, _ := b.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/labels/%d", l.ID), nil); code != http.StatusNotFound {
		t.Errorf("delete again: %d", code)
	}
}

// Bad input gets a clear 4xx.
func TestBadLabelRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		method, path string
		body         any
		want         int
	}{
		{http.MethodPost, "/api/v1/labels", map[string]string{"index": b.raw, "id": "low", "label": "Sports!"}, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/labels", map[string]string{"index": b.raw, "label": "sports"}, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/labels", map[string]string{"index": b.raw, "id": "nope", "label": "sports"}, http.StatusNotFound},
		{http.MethodPost, "/api/v1/labels", map[string]string{"index": "not-raw", "id": "low", "label": "sports"}, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/labels", map[string]string{"index": "Bad Name_raw_content", "id": "low", "label": "sports"}, http.StatusNotFound},
		{http.MethodPost, "/api/v1/labels", map[string]string{"index": "nosuch_raw_content", "id": "low", "label": "sports"}, http.StatusNotFound},
		{http.MethodPost, "/api/v1/labels", map[string]any{"index": b.raw, "id": "low", "label": 3}, http.StatusBadRequest},
		{http.MethodGet, "/api/v1/labels/candidates?limit=0", nil, http.StatusBadRequest},
		{http.MethodGet, "/api/v1/labels/candidates?limit=101", nil, http.StatusBadRequest},
		{http.MethodGet, "/api/v1/labels?limit=x", nil, http.StatusBadRequest},
		{http.MethodDelete, "/api/v1/labels/abc", nil, http.StatusBadRequest},
		{http.MethodDelete, "/api/v1/labels/424242", nil, http.StatusNotFound},
	} {
		if code, body := b.do(t, c.method, c.path, c.body); code != c.want {
			t.Errorf("%s %s %v: %d %s, want %d", c.method, c.path, c.body, code, body, c.want)
		}
	}
}

func TestClassifiedPattern(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                    labels.ClassifiedPatternDefault,
		"*_raw_content":                       "*_classified_content",
		"news_raw_content, -old*_raw_content": "news_classified_content,-old*_classified_content",
		"demo*":                               "demo*_classified_content",
		"exact_name_without_suffix":           labels.ClassifiedPatternDefault,
	} {
		if got := labels.ClassifiedPattern(in); got != want {
			t.Errorf("ClassifiedPattern(%q) = %q, want %q", in, got, want)
		}
	}
}
