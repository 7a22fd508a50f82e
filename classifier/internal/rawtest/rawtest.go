// Package rawtest writes raw documents into real Elasticsearch indices for
// tests, as the crawler would: each index is created with the strict raw
// mapping of package contentindex and refreshed, so what was written is
// searchable when Write returns.
package rawtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// Doc returns a raw document of source with id, pending, crawled at, with
// a title and a body a classifier admits.
func Doc(source, id string, crawled time.Time) contentindex.RawDocument {
	return contentindex.RawDocument{
		ID: id, URL: "https://" + source + ".test/" + id, SourceName: source,
		Title: "Council approves the budget " + id, RawText: "The council approved the budget on Tuesday after a long debate.",
		CrawledAt: crawled.UTC(), WordCount: 10, ClassificationStatus: contentindex.StatusPending,
	}
}

// Write creates index (strict mapping; an existing index is kept) and
// indexes docs into it with _id = ID, then refreshes it. Any failure ends
// the test.
func Write(t testing.TB, es *esclient.Client, index string, docs ...contentindex.RawDocument) {
	t.Helper()
	ctx := testenv.Context(t)
	if err := contentindex.CreateIndex(ctx, es, index); err != nil {
		t.Fatalf("create %s: %v", index, err)
	}
	items := make([]any, 0, len(docs))
	for _, d := range docs {
		items = append(items, d)
	}
	WriteJSON(t, es, index, items...)
}

// WriteJSON indexes arbitrary documents (a map, or a struct) into an
// existing index, each with _id from its "id" field, and refreshes it: for
// documents no crawler should write (a field of the wrong type).
func WriteJSON(t testing.TB, es *esclient.Client, index string, docs ...any) {
	t.Helper()
	if len(docs) == 0 {
		return
	}
	ctx := testenv.Context(t)
	var body bytes.Buffer
	for _, d := range docs {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var id struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &id); err != nil || id.ID == "" {
			t.Fatalf("document without an id: %s", b)
		}
		meta, _ := json.Marshal(map[string]any{"index": map[string]string{"_index": index, "_id": id.ID}})
		body.Write(meta)
		body.WriteByte('\n')
		body.Write(b)
		body.WriteByte('\n')
	}
	res, err := es.Bulk(&body, es.Bulk.WithContext(ctx), es.Bulk.WithRefresh("true"))
	if err := esclient.CheckResponse("rawtest bulk", res, err); err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out struct {
		Errors bool `json:"errors"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("rawtest bulk: %v", err)
	}
	if out.Errors {
		t.Fatalf("rawtest bulk refused documents: %s", truncate(string(raw), 2000))
	}
}

// Statuses returns the classification_status of every document of index,
// by id (at most 10,000 documents).
func Statuses(t testing.TB, es *esclient.Client, index string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, src := range Sources(t, es, index) {
		var d struct {
			Status string `json:"classification_status"`
		}
		if err := json.Unmarshal(src, &d); err != nil {
			t.Fatal(err)
		}
		out[id] = d.Status
	}
	return out
}

// Sources returns the _source of every document of index, by id, after a
// refresh (at most 10,000 documents).
func Sources(t testing.TB, es *esclient.Client, index string) map[string]json.RawMessage {
	t.Helper()
	ctx := testenv.Context(t)
	res, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(index), es.Indices.Refresh.WithContext(ctx))
	if err := esclient.CheckResponse("rawtest refresh", res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = es.Search(es.Search.WithIndex(index), es.Search.WithContext(ctx), es.Search.WithSize(10000),
		es.Search.WithBody(strings.NewReader(`{"query":{"match_all":{}}}`)))
	if err := esclient.CheckResponse("rawtest search", res, err); err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var parsed struct {
		Hits struct {
			Hits []struct {
				ID     string          `json:"_id"`
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]json.RawMessage, len(parsed.Hits.Hits))
	for _, h := range parsed.Hits.Hits {
		out[h.ID] = h.Source
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:n], len(s))
}

// Store returns a raw index store over es with the default byte bound.
func Store(t testing.TB, es *esclient.Client) *rawindex.Store {
	t.Helper()
	s, err := rawindex.New(rawindex.Config{ES: es})
	if err != nil {
		t.Fatalf("raw index store: %v", err)
	}
	return s
}
