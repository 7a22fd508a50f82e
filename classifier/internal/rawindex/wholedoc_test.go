package rawindex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// actionRecorder records the action of every bulk line it forwards.
type actionRecorder struct {
	mu      sync.Mutex
	actions []string
	next    http.RoundTripper
}

func (a *actionRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.URL.Path == "/_bulk" {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for line := 0; sc.Scan(); line++ {
			if line%2 == 0 {
				var meta map[string]json.RawMessage
				if err := json.Unmarshal(sc.Bytes(), &meta); err == nil {
					for action := range meta {
						a.mu.Lock()
						a.actions = append(a.actions, action)
						a.mu.Unlock()
					}
				}
			}
		}
	}
	return a.next.RoundTrip(r)
}

func (a *actionRecorder) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.actions
	a.actions = nil
	return out
}

// A raw document read whole is flipped with one whole-document index
// operation, conditional on the version it was read at, so Elasticsearch
// never reads the stored copy first; every field this replica does not set
// is kept as stored, and a stale copy (a second flip at the same version)
// loses on the version. The flip is the only write of the raw document: a
// claim is a row of the lease table.
func TestWholeDocumentFlipKeepsEveryFieldAndStaysConditional(t *testing.T) {
	t.Parallel()
	_, prefix := testenv.Elasticsearch(t)
	rec := &actionRecorder{next: http.DefaultTransport}
	es, err := esclient.NewLazy(esclient.Config{URL: testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch"), Transport: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	idx := prefix + "_w" + contentindex.RawSuffix
	mapping, _ := json.Marshal(map[string]any{"mappings": contentindex.RawMapping()})
	res, err := es.Indices.Create(idx, es.Indices.Create.WithBody(bytes.NewReader(mapping)))
	if err := esclient.CheckResponse("create index", res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	stored := map[string]any{
		"id": "doc-1", "url": "https://example.org/a?x=<b>&y=1", "source_name": "w", "title": "Budget <vote> & more",
		"raw_text": "The council met.", "meta_description": "Council", "og_type": "article", "word_count": 3,
		"crawled_at": "2026-11-26T08:00:00Z", "published_date": "2026-11-25T12:00:00Z", "classification_status": "pending",
	}
	body, _ := json.Marshal(stored)
	res, err = es.Index(idx, bytes.NewReader(body), es.Index.WithDocumentID("doc-1"), es.Index.WithRefresh("true"))
	if err := esclient.CheckResponse("index", res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	store, err := New(Config{ES: es})
	if err != nil {
		t.Fatal(err)
	}
	found, _, err := store.Get(ctx, []domain.DocKey{{Index: idx, ID: "doc-1"}})
	if err != nil || len(found) != 1 || found[0].Source == nil {
		t.Fatalf("Get = %v, %v; want the document with its whole source", found, err)
	}
	doc := found[0]
	stale := *doc
	if r, err := store.Flip(ctx, []Change{{Raw: doc, Status: contentindex.StatusClassified}}); err != nil || r[0].Err != nil {
		t.Fatalf("flip: %v %v", err, r)
	}
	// A second attempt at the version read before the flip loses on it.
	if r, err := store.Flip(ctx, []Change{{Raw: &stale, Status: contentindex.StatusFailed, Reason: "x"}}); err != nil || !Changed(r[0].Err) || !esclient.IsConflict(r[0].Err) {
		t.Fatalf("flip of a stale copy: %v %+v, want a conflict", err, r)
	}
	if got := rec.take(); len(got) != 2 || got[0] != "index" || got[1] != "index" {
		t.Errorf("bulk actions = %v, want two index operations (flip, stale flip)", got)
	}

	res, err = es.Get(idx, "doc-1")
	if err := esclient.CheckResponse("get", res, err); err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var got struct {
		Source map[string]any `json:"_source"`
	}
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	_ = json.Unmarshal(body, &want)
	want["classification_status"] = contentindex.StatusClassified
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got.Source)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("stored document\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

// A document without a kept source (read with a source filter, or built
// by hand) is changed by partial updates, as before.
func TestDocumentWithoutSourceIsUpdatedPartially(t *testing.T) {
	op := conditional(&domain.RawContent{Index: "i", SeqNo: 3, PrimaryTerm: 1}, map[string]any{"claimed_at": "x"})
	if op.Action != "update" || op.If == nil || op.If.SeqNo != 3 {
		t.Fatalf("op = %+v, want a conditional partial update", op)
	}
	op = conditional(&domain.RawContent{Index: "i", SeqNo: 3, PrimaryTerm: 1, Source: json.RawMessage(`[1]`)}, map[string]any{"claimed_at": "x"})
	if op.Action != "update" {
		t.Fatalf("op for a source that is not an object = %+v, want a partial update", op)
	}
}
