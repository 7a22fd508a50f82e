package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/north-cloud/index-manager/internal/api"
)

func TestListIndicesMakesOneElasticsearchRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	raw, classified, other := b.prefix+"_a_raw_content", b.prefix+"_a_classified_content", b.prefix+"_misc"
	for _, n := range []string{raw, classified, other} {
		b.createIndex(n)
	}
	b.indexDocs(raw, 3)

	b.rec.reset()
	res := b.do(request{Method: "GET", Path: "/api/v1/indices?prefix=" + b.prefix})
	if res.Status != http.StatusOK {
		t.Fatalf("list: %d %s", res.Status, res.Body)
	}
	if n, reqs := b.rec.snapshot(); n != 1 {
		t.Fatalf("list made %d Elasticsearch requests, want 1: %v", n, reqs)
	}
	var list api.IndexListResponse
	res.decode(t, &list)
	if list.Total != 3 || len(list.Indices) != 3 {
		t.Fatalf("listed %d (total %d), want 3: %s", len(list.Indices), list.Total, res.Body)
	}
	want := map[string]string{raw: "raw_content", classified: "classified_content", other: "other"}
	for _, s := range list.Indices {
		if want[s.Name] != s.IndexType {
			t.Errorf("%s: index_type %q, want %q", s.Name, s.IndexType, want[s.Name])
		}
		// A just-created empty index may report 0 bytes until its shard's
		// stats catch up; an index with documents never does.
		if s.Health == "" || s.Status != "open" || s.PrimaryCount != 1 || s.CreatedAt.IsZero() || s.StorageBytes < 0 ||
			(s.DocCount > 0 && s.StorageBytes == 0) || s.StorageSize == "" {
			t.Errorf("%s: incomplete summary %+v", s.Name, s)
		}
		if s.Name == raw && s.DocCount != 3 {
			t.Errorf("%s: doc_count %d, want 3", s.Name, s.DocCount)
		}
	}

	res = b.do(request{Method: "GET", Path: "/api/v1/indices?index_type=raw_content&prefix=" + b.prefix})
	res.decode(t, &list)
	if list.Total != 1 || list.Indices[0].Name != raw {
		t.Fatalf("index_type filter: %s", res.Body)
	}
	// The unfiltered list never shows system indices.
	res = b.do(request{Method: "GET", Path: "/api/v1/indices"})
	res.decode(t, &list)
	for _, s := range list.Indices {
		if strings.HasPrefix(s.Name, ".") {
			t.Errorf("system index %s listed", s.Name)
		}
	}
	for _, bad := range []string{"*", "a,b", "..", "A", "_all", "x*"} {
		res := b.do(request{Method: "GET", Path: "/api/v1/indices?prefix=" + url.QueryEscape(bad)})
		if res.Status != http.StatusBadRequest {
			t.Errorf("prefix %q: %d, want 400", bad, res.Status)
		}
	}
	if res := b.do(request{Method: "GET", Path: "/api/v1/indices?index_type=nope"}); res.Status != http.StatusBadRequest {
		t.Errorf("index_type=nope: %d, want 400", res.Status)
	}
}

// TestHostileNamesAreRefusedEverywhere sends invalid and hostile names to
// every endpoint that takes one: each gets 400 and nothing reaches
// Elasticsearch, so a victim index survives.
func TestHostileNamesAreRefusedEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	victim := b.prefix + "_victim_raw_content"
	b.createIndex(victim)
	names := []string{
		"*", ".security", ".kibana", "a,b", b.prefix + "_victim_raw_content,.security", "../x", "..", "_all",
		"UPPER_raw_content", strings.Repeat("x", 300) + "_raw_content", "foo", "_raw_content", "x*_raw_content",
		"-x_raw_content", "a b_raw_content", "a/b_raw_content", "a\\b_raw_content", "a#b_raw_content", "a:b_raw_content",
		"a?b_raw_content", "_raw_content", "%2e%2e", "x_raw_content/../.security",
	}
	for _, name := range names {
		esc := url.PathEscape(name)
		calls := []request{
			{Method: "GET", Path: "/api/v1/indices/" + esc},
			{Method: "GET", Path: "/api/v1/indices/" + esc + "/mappings"},
			{Method: "GET", Path: "/api/v1/indices/" + esc + "/stats"},
			{Method: "GET", Path: "/api/v1/indices/" + esc + "/documents"},
			{Method: "GET", Path: "/api/v1/indices/" + esc + "/documents/x"},
			{Method: "DELETE", Path: "/api/v1/indices/" + esc + "?confirm=true"},
			{Method: "POST", Path: "/api/v1/indices/" + esc + "/_refresh"},
			{Method: "POST", Path: "/api/v1/indices/" + esc + "/_query", Body: map[string]any{}},
			{Method: "POST", Path: "/api/v1/indices", Body: map[string]any{"name": name}},
		}
		for _, call := range calls {
			b.rec.reset()
			res := b.do(call)
			if res.Status != http.StatusBadRequest || res.errorCode(t) != "invalid_request" {
				t.Errorf("%s %s: %d %s, want 400 invalid_request", call.Method, call.Path, res.Status, res.Body)
			}
			if n, reqs := b.rec.snapshot(); n != 0 {
				t.Errorf("%s %s reached Elasticsearch: %v", call.Method, call.Path, reqs)
			}
		}
	}
	// An unescaped path trick matches no route at all.
	for _, p := range []string{"/api/v1/indices/../x", "/api/v1/indices/a/b/c/d/e"} {
		if res := b.do(request{Method: "DELETE", Path: p}); res.Status != http.StatusNotFound {
			t.Errorf("DELETE %s: %d, want 404", p, res.Status)
		}
	}
	if !b.exists(victim) {
		t.Fatal("victim index was deleted")
	}
	if got := b.auditEntries(""); len(got) != 0 {
		t.Fatalf("refused requests were audited as operations: %+v", got)
	}
}

func TestCreateIndex(t *testing.T) {
	t.Parallel()
	b := setup(t, options{protected: []string{"{prefix}_kept_raw_content"}})
	raw := b.prefix + "_new_raw_content"

	res := b.do(request{Method: "POST", Path: "/api/v1/indices", Body: map[string]any{"name": raw}})
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var ack api.AckResponse
	res.decode(t, &ack)
	if !ack.Acknowledged || ack.Index != raw || ack.IndexType != "raw_content" {
		t.Fatalf("ack %+v", ack)
	}
	// Without mappings in the request, the strict project mapping applies.
	res = b.do(request{Method: "GET", Path: "/api/v1/indices/" + raw + "/mappings"})
	var m map[string]any
	res.decode(t, &m)
	props, _ := m["properties"].(map[string]any)
	if m["dynamic"] != "strict" || props["classification_status"] == nil {
		t.Fatalf("mapping is not the strict raw mapping: %s", res.Body)
	}

	res = b.do(request{Method: "POST", Path: "/api/v1/indices", Body: map[string]any{"name": raw}})
	if res.Status != http.StatusConflict || res.errorCode(t) != "already_exists" {
		t.Fatalf("create existing: %d %s, want 409", res.Status, res.Body)
	}

	// Allowlisted settings apply; the mapping is always the shipped one.
	custom := b.prefix + "_custom_classified_content"
	res = b.do(request{Method: "POST", Path: "/api/v1/indices", Body: map[string]any{
		"name":     custom,
		"settings": map[string]any{"number_of_shards": 2, "number_of_replicas": 0},
	}})
	if res.Status != http.StatusCreated {
		t.Fatalf("create custom: %d %s", res.Status, res.Body)
	}
	res = b.do(request{Method: "GET", Path: "/api/v1/indices/" + custom})
	var d struct {
		Mappings map[string]any `json:"mappings"`
		Stats    struct {
			PrimaryShards int `json:"primary_shards"`
		} `json:"stats"`
	}
	res.decode(t, &d)
	props, _ = d.Mappings["properties"].(map[string]any)
	if props["topics"] == nil || d.Mappings["dynamic"] != "strict" || d.Stats.PrimaryShards != 2 {
		t.Fatalf("settings not applied or mapping not the shipped one: %s", res.Body)
	}

	bad := []struct {
		name string
		req  request
		code int
	}{
		{"malformed JSON", request{Body: `{"name":`}, http.StatusBadRequest},
		{"not an object", request{Body: `[1,2]`}, http.StatusBadRequest},
		{"trailing data", request{Body: `{"name":"` + b.prefix + `_t_raw_content"} {}`}, http.StatusBadRequest},
		{"unknown field", request{Body: `{"name":"` + b.prefix + `_u_raw_content","aliases":{".security":{}}}`}, http.StatusBadRequest},
		{"empty body", request{Body: ``}, http.StatusBadRequest},
		{"no name", request{Body: `{}`}, http.StatusBadRequest},
		{"invalid settings", request{Body: `{"name":"` + b.prefix + `_s_raw_content","settings":{"number_of_shards":"many"}}`}, http.StatusBadRequest},
		{"protected", request{Body: `{"name":"` + b.prefix + `_kept_raw_content"}`}, http.StatusForbidden},
		{"oversized body", request{Body: `{"name":"` + strings.Repeat("a", maxBody) + `"}`}, http.StatusRequestEntityTooLarge},
		{"oversized chunked body", request{Body: `{"name":"` + strings.Repeat("a", maxBody) + `"}`, Chunked: true}, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range bad {
		tc.req.Method, tc.req.Path = "POST", "/api/v1/indices"
		res := b.do(tc.req)
		if res.Status != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, res.Status, res.Body, tc.code)
		}
	}
	for _, n := range []string{"_t_raw_content", "_u_raw_content", "_s_raw_content"} {
		if b.exists(b.prefix + n) {
			t.Errorf("%s was created by a refused request", b.prefix+n)
		}
	}
	entries := b.auditEntries(raw)
	if len(entries) != 2 || entries[1].Outcome != "success" || entries[0].Outcome != "failure" || *entries[0].StatusCode != 409 {
		t.Fatalf("audit of %s: %+v", raw, entries)
	}
}

func TestIndexDetailsMappingsAndStats(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "_d_classified_content"
	b.createIndex(name)
	res, err := b.es.Indices.PutAlias([]string{name}, b.prefix+"_alias")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	r := b.do(request{Method: "GET", Path: "/api/v1/indices/" + name})
	if r.Status != http.StatusOK {
		t.Fatalf("detail: %d %s", r.Status, r.Body)
	}
	var d struct {
		Name     string         `json:"name"`
		Settings map[string]any `json:"settings"`
		Mappings map[string]any `json:"mappings"`
		Aliases  []string       `json:"aliases"`
		Health   string         `json:"health"`
	}
	r.decode(t, &d)
	if d.Name != name || d.Settings["index"] == nil || d.Mappings["dynamic"] != "strict" || len(d.Aliases) != 1 || d.Aliases[0] != b.prefix+"_alias" || d.Health == "" {
		t.Fatalf("detail: %s", r.Body)
	}
	r = b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/stats"})
	if r.Status != http.StatusOK {
		t.Fatalf("stats: %d %s", r.Status, r.Body)
	}
	missing := b.prefix + "_missing_raw_content"
	for _, p := range []string{"", "/mappings", "/stats", "/documents", "/documents/x"} {
		r := b.do(request{Method: "GET", Path: "/api/v1/indices/" + missing + p})
		if r.Status != http.StatusNotFound || r.errorCode(t) != "not_found" {
			t.Errorf("GET unknown index%s: %d %s, want 404", p, r.Status, r.Body)
		}
	}
	r = b.do(request{Method: "POST", Path: "/api/v1/indices/" + missing + "/_query", Body: map[string]any{}})
	if r.Status != http.StatusNotFound {
		t.Errorf("query unknown index: %d %s, want 404", r.Status, r.Body)
	}
	// An alias that looks like a content index is not an index.
	aliased := b.prefix + "_al_raw_content"
	res, err = b.es.Indices.PutAlias([]string{name}, aliased)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, call := range []request{
		{Method: "GET", Path: "/api/v1/indices/" + aliased},
		{Method: "GET", Path: "/api/v1/indices/" + aliased + "/stats"},
		{Method: "GET", Path: "/api/v1/indices/" + aliased + "/mappings"},
	} {
		if r := b.do(call); r.Status != http.StatusNotFound {
			t.Errorf("%s %s through an alias: %d %s, want 404", call.Method, call.Path, r.Status, r.Body)
		}
	}
}

func TestGetDocument(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "_g_raw_content"
	b.createIndex(name)
	b.indexDocs(name, 2)
	r := b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/documents/doc-1"})
	if r.Status != http.StatusOK {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	var hit struct {
		ID     string         `json:"_id"`
		Source map[string]any `json:"_source"`
	}
	r.decode(t, &hit)
	if hit.ID != "doc-1" || hit.Source["id"] != "doc-1" {
		t.Fatalf("hit %s", r.Body)
	}
	for _, id := range []string{"nope", "doc-1?x=1", "doc-1/../doc-0", "..", "_search", "doc-1#frag", "%"} {
		r := b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/documents/" + url.PathEscape(id)})
		if r.Status != http.StatusNotFound || r.errorCode(t) != "not_found" {
			t.Errorf("id %q: %d %s, want 404", id, r.Status, r.Body)
		}
	}
	r = b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/documents/" + strings.Repeat("x", 600)})
	if r.Status != http.StatusBadRequest {
		t.Errorf("600-byte id: %d, want 400", r.Status)
	}
}

// TestDocumentsPageBeyondTenThousand pages through 10,050 documents with
// the cursor (search_after on a point in time) and sees every one once;
// from beyond the 10,000 window is refused.
func TestDocumentsPageBeyondTenThousand(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "_deep_raw_content"
	b.createIndex(name)
	const total = 10050
	b.indexDocs(name, total)

	seen := make(map[string]bool, total)
	path := "/api/v1/indices/" + name + "/documents?size=100&sort=word_count:desc"
	pages := 0
	for {
		r := b.do(request{Method: "GET", Path: path})
		if r.Status != http.StatusOK {
			t.Fatalf("page %d: %d %s", pages, r.Status, r.Body)
		}
		var page struct {
			Total      int64  `json:"total"`
			NextCursor string `json:"next_cursor"`
			Hits       []struct {
				ID     string         `json:"_id"`
				Source map[string]any `json:"_source"`
			} `json:"hits"`
		}
		r.decode(t, &page)
		if page.Total != total {
			t.Fatalf("total %d, want %d", page.Total, total)
		}
		for _, h := range page.Hits {
			if seen[h.ID] {
				t.Fatalf("document %s returned twice", h.ID)
			}
			seen[h.ID] = true
		}
		if pages == 0 && (len(page.Hits) == 0 || page.Hits[0].ID != fmt.Sprintf("doc-%d", total-1)) {
			t.Fatalf("sort not applied: first page starts with %+v", page.Hits[:1])
		}
		pages++
		if page.NextCursor == "" {
			break
		}
		if pages > total/100+2 {
			t.Fatal("pagination does not end")
		}
		path = "/api/v1/indices/" + name + "/documents?size=100&cursor=" + url.QueryEscape(page.NextCursor)
	}
	if len(seen) != total {
		t.Fatalf("saw %d documents, want %d", len(seen), total)
	}

	bad := []string{
		"?from=10000&size=10", "?from=9995", "?size=101", "?size=0", "?size=-1", "?from=x",
		"?cursor=garbage", "?cursor=eyJpIjoieCJ9.AAAA", "?sort=title:sideways", "?sort=_index", "?sort=_doc", "?sort=" + url.QueryEscape(`{"script":1}`),
	}
	for _, q := range bad {
		r := b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/documents" + q})
		if r.Status != http.StatusBadRequest {
			t.Errorf("documents%s: %d %s, want 400", q, r.Status, r.Body)
		}
	}
	// A valid cursor of one index does not work on another.
	other := b.prefix + "_other_raw_content"
	b.createIndex(other)
	b.indexDocs(other, 3)
	r := b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/documents?size=1"})
	var page struct {
		NextCursor string `json:"next_cursor"`
	}
	r.decode(t, &page)
	r = b.do(request{Method: "GET", Path: "/api/v1/indices/" + other + "/documents?cursor=" + url.QueryEscape(page.NextCursor)})
	if r.Status != http.StatusBadRequest || r.errorCode(t) != "invalid_cursor" {
		t.Fatalf("cursor of another index: %d %s, want 400 invalid_cursor", r.Status, r.Body)
	}
}
