package contentindex

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

func TestTypeOfAndNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		index string
		want  Type
	}{
		{"cbc_raw_content", TypeRaw},
		{"cbc_classified_content", TypeClassified},
		{"_raw_content", TypeOther},
		{"cbc_raw_content_old", TypeOther},
		{".security", TypeOther},
	}
	for _, tt := range tests {
		if got := TypeOf(tt.index); got != tt.want {
			t.Errorf("TypeOf(%q) = %q, want %q", tt.index, got, tt.want)
		}
	}
	if got := ClassifiedIndexFor(RawIndex("cbc")); got != "cbc_classified_content" {
		t.Errorf("ClassifiedIndexFor = %q", got)
	}
}

func TestValidSource(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"cbc": true, "local_news-2": true, "": false, "*": false, "CBC": false,
		"a,b": false, "../x": false, "_x": false, strings.Repeat("a", 201): false,
	} {
		if got := ValidSource(s); got != want {
			t.Errorf("ValidSource(%q) = %t, want %t", s, got, want)
		}
	}
}

// Every field a writer sends must be in the strict mapping, or Elasticsearch
// rejects the document: check the RawDocument JSON keys against it.
func TestRawDocumentFieldsAreMapped(t *testing.T) {
	t.Parallel()
	now := time.Now()
	doc := RawDocument{ID: "1", URL: "u", SourceName: "s", Title: "t", RawText: "x", RawHTML: "h", OGType: "article",
		MetaDescription: "d", PublishedDate: "2026", CrawledAt: now, WordCount: 1, ClassificationStatus: StatusPending,
		ClaimedBy: "c", ClaimedAt: &now, ClassificationError: "e"}
	b, _ := json.Marshal(doc)
	var fields map[string]any
	_ = json.Unmarshal(b, &fields)
	props := RawMapping()["properties"].(map[string]any)
	for k := range fields {
		if _, ok := props[k]; !ok {
			t.Errorf("RawDocument field %q is not in RawMapping", k)
		}
	}
	if RawMapping()["dynamic"] != "strict" || ClassifiedMapping()["dynamic"] != "strict" {
		t.Error("content mappings must be strict")
	}
}

func TestEnsureTemplatesAppliesStrictMappings(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	ctx := context.Background()

	for range 2 { // idempotent
		if err := EnsureTemplates(ctx, es); err != nil {
			t.Fatalf("EnsureTemplates: %v", err)
		}
	}

	raw := RawIndex(prefix + "_src")
	// Indexing into a new index creates it from the template.
	doc := map[string]any{"id": "a", "url": "https://x.test/a", "source_name": prefix, "title": "t",
		"raw_text": "hello", "crawled_at": time.Now().UTC(), "classification_status": "pending",
		"published_date": "not a date"}
	if status := index(t, es, raw, "a", doc); status != 201 {
		t.Fatalf("index valid doc: status %d, want 201", status)
	}
	doc["surprise"] = "unknown field"
	if status := index(t, es, raw, "b", doc); status != 400 {
		t.Fatalf("index doc with unknown field: status %d, want 400 (strict mapping)", status)
	}

	res, err := es.Indices.GetMapping(es.Indices.GetMapping.WithIndex(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var got map[string]struct {
		Mappings map[string]any `json:"mappings"`
	}
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got[raw].Mappings["dynamic"] != "strict" {
		t.Fatalf("mapping of %s = %v, want dynamic strict from the template", raw, got[raw].Mappings)
	}

	// CreateIndex treats an existing index as success.
	classified := ClassifiedIndex(prefix + "_src")
	for range 2 {
		if err := CreateIndex(ctx, es, classified); err != nil {
			t.Fatalf("CreateIndex: %v", err)
		}
	}
}

func index(t *testing.T, es *esclient.Client, idx, id string, doc map[string]any) int {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := es.Index(idx, bytes.NewReader(b), es.Index.WithDocumentID(id), es.Index.WithRefresh("true"))
	if err != nil {
		t.Fatalf("index %s/%s: %v", idx, id, err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// Content indices get min(1, data nodes - 1) replicas, however they are
// created (CreateIndex, or the template on a first write): none on a single
// node, which stays green, and one on a cluster, where every shard then has
// a copy on a second node. Run it with the 3-node cluster's environment to
// see the replica; on the single node it checks that there is none.
func TestReplicasFollowTheDataNodes(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	ctx := context.Background()
	if err := EnsureTemplates(ctx, es); err != nil {
		t.Fatalf("EnsureTemplates: %v", err)
	}
	var health struct {
		DataNodes int `json:"number_of_data_nodes"`
	}
	getJSON(t, es, "/_cluster/health", &health)
	want := min(1, health.DataNodes-1)

	created := ClassifiedIndex(prefix + "_replicas")
	if err := CreateIndex(ctx, es, created); err != nil {
		t.Fatalf("CreateIndex: %v", err)
	}
	templated := RawIndex(prefix + "_replicas")
	if status := index(t, es, templated, "a", map[string]any{"id": "a", "url": "https://x.test/a", "source_name": prefix,
		"title": "t", "raw_text": "hello", "crawled_at": time.Now().UTC(), "classification_status": "pending"}); status != 201 {
		t.Fatalf("index into a new raw index: status %d, want 201", status)
	}
	for _, idx := range []string{created, templated} {
		// Green: every replica the rule asks for is assigned.
		var h struct {
			Status string `json:"status"`
		}
		getJSON(t, es, "/_cluster/health/"+idx+"?wait_for_status=green&timeout=60s", &h)
		var settings map[string]struct {
			Settings struct {
				Index struct {
					Replicas   string `json:"number_of_replicas"`
					AutoExpand string `json:"auto_expand_replicas"`
				} `json:"index"`
			} `json:"settings"`
		}
		getJSON(t, es, "/"+idx+"/_settings", &settings)
		got := settings[idx].Settings.Index
		t.Logf("%s on %d data nodes: %s replicas (auto_expand_replicas %s), health %s", idx, health.DataNodes, got.Replicas, got.AutoExpand, h.Status)
		if got.Replicas != strconv.Itoa(want) || got.AutoExpand != AutoExpandReplicas || h.Status != "green" {
			t.Errorf("%s: %s replicas (auto_expand_replicas %q), health %s; want %d replicas on %d data nodes, green",
				idx, got.Replicas, got.AutoExpand, h.Status, want, health.DataNodes)
		}
	}
}

func getJSON(t *testing.T, es *esclient.Client, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := es.Perform(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// An index created before a field existed gets it at the next start-up;
// one that refuses a mapping change (read-only) is left as it is and does
// not stop the others.
func TestAddMissingFieldsUpgradesOldIndices(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	ctx := context.Background()
	old := map[string]any{}
	for k, v := range rawProperties() {
		if k != "priority" {
			old[k] = v
		}
	}
	// The indices are made as an older version made them: a template of
	// this test's own, above the current one, holds the old mapping.
	tmpl := prefix + "_old_mapping"
	tb, _ := json.Marshal(map[string]any{"index_patterns": []string{prefix + "*" + RawSuffix}, "priority": templatePriority + 10,
		"template": map[string]any{"mappings": map[string]any{"dynamic": "strict", "properties": old}}})
	if res, err := es.Indices.PutIndexTemplate(tmpl, bytes.NewReader(tb)); err != nil || res.IsError() {
		t.Fatalf("put the old template: %v %v", err, res)
	}
	t.Cleanup(func() {
		if res, err := es.Indices.DeleteIndexTemplate(tmpl); err == nil {
			res.Body.Close()
		}
	})
	create := func(name string, settings map[string]any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"settings": settings})
		res, err := es.Indices.Create(name, es.Indices.Create.WithBody(bytes.NewReader(body)))
		if err != nil || res.IsError() {
			t.Fatalf("create %s: %v %v", name, err, res)
		}
		res.Body.Close()
	}
	upgrade, frozen := RawIndex(prefix+"_old"), RawIndex(prefix+"_frozen")
	create(upgrade, map[string]any{"number_of_replicas": 0})
	create(frozen, map[string]any{"number_of_replicas": 0, "index.blocks.read_only": true})
	t.Cleanup(func() {
		res, err := es.Indices.PutSettings(strings.NewReader(`{"index.blocks.read_only": false}`), es.Indices.PutSettings.WithIndex(frozen))
		if err == nil {
			res.Body.Close()
		}
	})
	if n := AddMissingFields(ctx, es, testenv.Logger(t)); n < 1 {
		t.Fatalf("upgraded %d indices, want at least %s", n, upgrade)
	}
	doc := map[string]any{"id": "a", "url": "https://x.test/a", "source_name": prefix, "title": "t", "raw_text": "x",
		"crawled_at": time.Now().UTC(), "classification_status": "pending", "priority": "low"}
	if status := index(t, es, upgrade, "a", doc); status != 201 {
		t.Fatalf("document with priority in the upgraded index: status %d, want 201", status)
	}
	res, err := es.Indices.GetMapping(es.Indices.GetMapping.WithIndex(frozen))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if strings.Contains(string(b), `"priority"`) {
		t.Fatalf("the read-only index was changed: %s", b)
	}
}

// A document waits since its requeue when a reprocess set it back to
// pending after its crawl, and since its crawl otherwise (a crawler that
// rewrote it after the requeue made it new again).
func TestWaitingSince(t *testing.T) {
	crawled := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later, earlier := crawled.Add(time.Hour), crawled.Add(-time.Hour)
	for _, c := range []struct {
		pending *time.Time
		want    time.Time
	}{{nil, crawled}, {&later, later}, {&earlier, crawled}} {
		d := RawDocument{CrawledAt: crawled, PendingSince: c.pending}
		if got := d.WaitingSince(); !got.Equal(c.want) {
			t.Errorf("pending_since %v: waiting since %s, want %s", c.pending, got, c.want)
		}
	}
}
