package api_test

import (
	"net/http"
	"testing"
)

// TestElasticsearchDownIs503: with Elasticsearch unreachable every endpoint
// answers 503 elasticsearch_unavailable (never a bare 500), and the failed
// create is audited as a failure.
func TestElasticsearchDownIs503(t *testing.T) {
	t.Parallel()
	b := setup(t, options{esURL: "http://127.0.0.1:1"})
	name := b.prefix + "_down_raw_content"
	for _, call := range []request{
		{Method: "GET", Path: "/api/v1/indices"},
		{Method: "GET", Path: "/api/v1/indices/" + name},
		{Method: "GET", Path: "/api/v1/indices/" + name + "/mappings"},
		{Method: "GET", Path: "/api/v1/indices/" + name + "/stats"},
		{Method: "GET", Path: "/api/v1/indices/" + name + "/documents"},
		{Method: "GET", Path: "/api/v1/indices/" + name + "/documents/x"},
		{Method: "POST", Path: "/api/v1/indices/" + name + "/_query", Body: `{}`},
		{Method: "POST", Path: "/api/v1/indices/" + name + "/_refresh"},
		{Method: "DELETE", Path: "/api/v1/indices/" + name},
		{Method: "POST", Path: "/api/v1/indices", Body: map[string]any{"name": name}},
	} {
		r := b.do(call)
		if r.Status != http.StatusServiceUnavailable || r.errorCode(t) != "elasticsearch_unavailable" {
			t.Errorf("%s %s: %d %s, want 503", call.Method, call.Path, r.Status, r.Body)
		}
	}
	e := b.auditEntries(name)
	if len(e) != 3 {
		t.Fatalf("audit entries %+v, want create, delete and refresh", e)
	}
	for _, entry := range e {
		if entry.Outcome != "failure" || *entry.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("audit %+v", entry)
		}
	}
}

// TestAuditDatabaseDownRefusesChanges: when the audit entry cannot be
// written the operation does not run: 503 and the index stays.
func TestAuditDatabaseDownRefusesChanges(t *testing.T) {
	t.Parallel()
	b := setup(t, options{closedDB: true})
	name := b.prefix + "_keep_raw_content"
	b.createIndex(name)
	fresh := b.prefix + "_fresh_raw_content"
	for _, call := range []request{
		{Method: "DELETE", Path: "/api/v1/indices/" + name},
		{Method: "POST", Path: "/api/v1/indices", Body: map[string]any{"name": fresh}},
		{Method: "POST", Path: "/api/v1/indices/" + name + "/_refresh"},
		{Method: "GET", Path: "/api/v1/audit"},
	} {
		r := b.do(call)
		if r.Status != http.StatusServiceUnavailable || r.errorCode(t) != "database_unavailable" {
			t.Errorf("%s %s: %d %s, want 503", call.Method, call.Path, r.Status, r.Body)
		}
	}
	if !b.exists(name) || b.exists(fresh) {
		t.Fatal("an unaudited operation changed the indices")
	}
}
