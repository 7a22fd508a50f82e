package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/auth"
)

// TestViewersReadNoBodiesWhenHidden: under VIEWER_MESSAGE_BODIES=hide a
// viewer reads documents without raw_text, raw_html and body, and may not
// search, highlight, sort or aggregate on them; an operator reads and
// searches them as before, and so does a viewer when bodies are shown.
func TestViewersReadNoBodiesWhenHidden(t *testing.T) {
	t.Parallel()
	for _, bodies := range []api.MessageBodies{api.BodiesHidden, api.BodiesShown} {
		t.Run(string(bodies), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{bodies: bodies})
			name := b.prefix + "bodies_raw_content"
			b.createIndex(name)
			b.indexBodyDoc(name)
			hidden := bodies == api.BodiesHidden
			for _, role := range auth.Roles() {
				token, _, err := b.authn.Issue("u-"+string(role), role, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				hides := hidden && role == auth.RoleViewer
				t.Run(string(role), func(t *testing.T) {
					var me api.MeResponse
					b.do(request{Method: "GET", Path: "/api/v1/auth/me", Token: &token}).decode(t, &me)
					if me.ReadsBodies == hides {
						t.Errorf("auth/me reads_bodies = %v, want %v", me.ReadsBodies, !hides)
					}
					reads := []request{
						{Method: "GET", Path: "/api/v1/indices/" + name + "/documents/d1", Token: &token},
						{Method: "GET", Path: "/api/v1/indices/" + name + "/documents", Token: &token},
						{Method: "POST", Path: "/api/v1/indices/" + name + "/_query", Token: &token,
							Body: map[string]any{"query": map[string]any{"match": map[string]any{"title": "harbour"}}}},
					}
					for _, r := range reads {
						res := b.do(r)
						if res.Status != http.StatusOK {
							t.Fatalf("%s %s: %d %s", r.Method, r.Path, res.Status, res.Body)
						}
						if got := strings.Contains(string(res.Body), "secret"); got == hides {
							t.Errorf("%s %s: body text present = %v, want %v: %s", r.Method, r.Path, got, !hides, res.Body)
						}
						if !strings.Contains(string(res.Body), "harbour") {
							t.Errorf("%s %s: the title is missing: %s", r.Method, r.Path, res.Body)
						}
					}
					probes := []map[string]any{
						{"query": map[string]any{"match": map[string]any{"raw_text": "secret"}}},
						{"query": map[string]any{"match_phrase": map[string]any{"raw_text.keyword": "secret"}}},
						{"query": map[string]any{"query_string": map[string]any{"query": "raw_text:secret"}}},
						{"query": map[string]any{"multi_match": map[string]any{"query": "secret"}}},
						{"query": map[string]any{"multi_match": map[string]any{"query": "secret", "fields": []any{"title", "raw_*"}}}},
						{"query": map[string]any{"simple_query_string": map[string]any{"query": "secret"}}},
						{"query": map[string]any{"exists": map[string]any{"field": "body"}}},
						{"highlight": map[string]any{"fields": map[string]any{"*": map[string]any{}}}},
						{"sort": []any{map[string]any{"field": "raw_text", "order": "asc"}}},
					}
					for _, p := range probes {
						res := b.do(request{Method: "POST", Path: "/api/v1/indices/" + name + "/_query", Token: &token, Body: p})
						refused := res.Status == http.StatusForbidden
						if refused != hides {
							line, _ := json.Marshal(p)
							t.Errorf("probe %s: %d, want refused = %v: %s", line, res.Status, hides, res.Body)
						}
						if refused && !strings.Contains(string(res.Body), "VIEWER_MESSAGE_BODIES") {
							t.Errorf("a refusal should name the setting: %s", res.Body)
						}
					}
				})
			}
		})
	}
}

// indexBodyDoc indexes one raw document d1 whose text and page hold the
// word "secret" and whose title holds "harbour".
func (b *bundle) indexBodyDoc(name string) {
	b.t.Helper()
	doc := `{"id":"d1","title":"harbour news","raw_text":"a secret text","raw_html":"<p>secret page</p>","classification_status":"pending","source_name":"test"}`
	res, err := b.es.Index(name, strings.NewReader(doc), b.es.Index.WithDocumentID("d1"), b.es.Index.WithRefresh("true"))
	if err != nil || res.IsError() {
		b.t.Fatalf("index d1: %v %v", err, res)
	}
	res.Body.Close()
}
