package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	server "github.com/north-cloud/dashboard-server"
	"github.com/north-cloud/infrastructure/openapi"
)

func TestParseFeatures(t *testing.T) {
	t.Parallel()
	all, err := server.ParseFeatures("")
	must(t, err)
	for _, f := range server.Features() {
		if !all.Enabled(f) {
			t.Errorf("default: %s off, want every feature on", f)
		}
	}
	s, err := server.ParseFeatures(" live_tail=off, exports=false,reprocess=on ")
	must(t, err)
	if s.Enabled(server.FeatureLiveTail) || s.Enabled(server.FeatureExports) || !s.Enabled(server.FeatureReprocess) || !s.Enabled(server.FeatureRulesEdit) {
		t.Errorf("live_tail=off,exports=false,reprocess=on: %v", s)
	}
	if got := s.String(); got != "exports=off,live_tail=off" {
		t.Errorf("String() = %q", got)
	}
	for raw, want := range map[string]string{"tail=off": `unknown feature "tail"`, "exports": "want name=on", "exports=maybe": "must be on or off"} {
		if _, err := server.ParseFeatures(raw); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "DASHBOARD_FEATURES") {
			t.Errorf("ParseFeatures(%q) = %v, want an error with %q", raw, err, want)
		}
	}
	if _, err := server.ConfigFromEnv(func(k string) string {
		return map[string]string{"JWT_SECRET": testSecret, "DASHBOARD_FEATURES": "nope=off"}[k]
	}); err == nil || !strings.Contains(err.Error(), "DASHBOARD_FEATURES") {
		t.Errorf("ConfigFromEnv with a bad DASHBOARD_FEATURES: %v", err)
	}
}

// TestFeaturesServedAndEnforced: GET /api/features says what is on, and a
// disabled feature's own API routes are refused at the server with 403
// naming the flag, the upstream never seeing them; its reads and the
// other features' routes pass. With every feature on the same requests
// are forwarded.
func TestFeaturesServedAndEnforced(t *testing.T) {
	t.Parallel()
	refused := []struct{ method, path, feature string }{
		{"POST", "/api/classifier/api/v1/rules", "rules_edit"},
		{"PUT", "/api/classifier/api/v1/rules/7", "rules_edit"},
		{"DELETE", "/api/classifier/api/v1/rules/7", "rules_edit"},
		{"POST", "/api/classifier/api/v1/rules/7/enable", "rules_edit"},
		{"POST", "/api/classifier/api/v1/rules/7/disable", "rules_edit"},
		{"POST", "/api/classifier/api/v1/sources/demo_news/reprocess", "reprocess"},
		{"DELETE", "/api/classifier/api/v1/sources/demo_news/reprocess/t1", "reprocess"},
		{"GET", "/api/live", "live_tail"},
		{"POST", "/api/classifier/api/v1/labels", "labelling"},
		{"DELETE", "/api/classifier/api/v1/labels/12", "labelling"},
		{"POST", "/api/classifier/api/v1/models/train?name=m&from=labels", "labelling"},
	}
	passed := []struct{ method, path string }{
		{"GET", "/api/classifier/api/v1/rules"},
		{"POST", "/api/classifier/api/v1/rules/test"},
		{"POST", "/api/classifier/api/v1/classify"},
		{"GET", "/api/classifier/api/v1/sources/demo_news/reprocess"},
		{"POST", "/api/classifier/api/v1/dlq/requeue"},
		{"POST", "/api/index-manager/api/v1/indices/x/_query"},
		{"GET", "/api/classifier/api/v1/labels/candidates"},
		{"GET", "/api/classifier/api/v1/labels/export"},
		{"POST", "/api/classifier/api/v1/models/train?name=m"},
	}
	raw, err := os.ReadFile("openapi.yaml")
	must(t, err)
	doc, err := openapi.Load(raw)
	must(t, err)
	for _, off := range []string{"live_tail=off,rules_edit=off,reprocess=off,exports=off,query_explorer=off,labelling=off", ""} {
		features, err := server.ParseFeatures(off)
		must(t, err)
		b := setupCfg(t, func(c *server.Config) { c.Features = features })

		status, hdr, body := get(t, b.srv.URL+"/api/features")
		req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/api/features", nil)
		if err := doc.CheckResponse(req, status, hdr, []byte(body)); err != nil {
			t.Errorf("/api/features against openapi.yaml: %v", err)
		}
		var got struct {
			Features map[string]bool `json:"features"`
			Disabled []string        `json:"disabled"`
		}
		must(t, json.Unmarshal([]byte(body), &got))
		if status != http.StatusOK || len(got.Features) != len(server.Features()) || got.Features["live_tail"] != (off == "") || got.Features["exports"] != (off == "") {
			t.Errorf("DASHBOARD_FEATURES=%q: /api/features = %d %s", off, status, body)
		}
		for _, c := range refused {
			req, _ := http.NewRequest(c.method, b.srv.URL+c.path, strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer "+token(t))
			res, err := http.DefaultClient.Do(req)
			must(t, err)
			var e struct {
				Error struct{ Code, Message string }
			}
			_ = json.NewDecoder(res.Body).Decode(&e)
			res.Body.Close()
			if off != "" && (res.StatusCode != http.StatusForbidden || e.Error.Code != "feature_disabled" ||
				!strings.Contains(e.Error.Message, c.feature+"=off") || !strings.Contains(e.Error.Message, "DASHBOARD_FEATURES")) {
				t.Errorf("%s %s with %s off = %d %+v, want 403 feature_disabled naming it", c.method, c.path, c.feature, res.StatusCode, e.Error)
			}
			if off == "" && res.StatusCode == http.StatusForbidden {
				t.Errorf("%s %s with every feature on = 403 %+v", c.method, c.path, e.Error)
			}
		}
		for _, c := range passed {
			wantForwarded(t, b.srv.URL, c.method, c.path, fmt.Sprintf("DASHBOARD_FEATURES=%q", off))
		}
		if n := len(*b.upstreams["classifier"]); off != "" && n != 8 {
			t.Errorf("the classifier saw %d requests, want only the 8 that pass", n)
		}
	}
}

// TestViewFeaturesCloseTheirRoutes: rules=off and index_manager=off turn
// whole views off, so the server refuses every method of the routes only
// those views call (reads, and reads sent by POST such as the rules
// playground, included) with 403 feature_disabled naming the flag, the
// upstream never seeing them, while the routes other views share (the
// index list, one document, _query, the content count, the audit log,
// sign-in) pass. With both on the same requests are forwarded.
func TestViewFeaturesCloseTheirRoutes(t *testing.T) {
	t.Parallel()
	refused := []struct{ method, path, feature string }{
		{"GET", "/api/classifier/api/v1/rules", "rules"},
		{"GET", "/api/classifier/api/v1/rules?topic=crime&enabled=true", "rules"},
		{"HEAD", "/api/classifier/api/v1/rules/7", "rules"},
		{"POST", "/api/classifier/api/v1/rules/test", "rules"},
		{"POST", "/api/classifier/api/v1/rules", "rules"},
		{"PUT", "/api/classifier/api/v1/rules/7", "rules"},
		{"DELETE", "/api/classifier/api/v1/rules/7", "rules"},
		{"POST", "/api/classifier/api/v1/rules/7/enable", "rules"},
		{"POST", "/api/classifier/api/v1/rules/7/disable", "rules"},
		{"POST", "/api/index-manager/api/v1/indices", "index_manager"},
		{"GET", "/api/index-manager/api/v1/indices/demo_raw_content", "index_manager"},
		{"DELETE", "/api/index-manager/api/v1/indices/demo_raw_content?confirm=true", "index_manager"},
		{"GET", "/api/index-manager/api/v1/indices/demo_raw_content/mappings", "index_manager"},
		{"GET", "/api/index-manager/api/v1/indices/demo_raw_content/stats", "index_manager"},
		{"GET", "/api/index-manager/api/v1/indices/demo_raw_content/documents?size=20", "index_manager"},
		{"POST", "/api/index-manager/api/v1/indices/demo_raw_content/_refresh", "index_manager"},
		{"POST", "/api/index-manager/api/v1/indices/demo_raw_content/_forcemerge", "index_manager"},
		{"PUT", "/api/index-manager/api/v1/indices/demo_raw_content/aliases/current", "index_manager"},
		{"DELETE", "/api/index-manager/api/v1/indices/demo_raw_content/aliases/current", "index_manager"},
		{"GET", "/api/index-manager/api/v1/aliases", "index_manager"},
		{"GET", "/api/index-manager/api/v1/tasks/node-1:42", "index_manager"},
	}
	passed := []struct{ method, path string }{
		{"GET", "/api/index-manager/api/v1/indices"},
		{"GET", "/api/index-manager/api/v1/indices?index_type=raw_content"},
		{"GET", "/api/index-manager/api/v1/indices/demo_raw_content/documents/doc-1"},
		{"POST", "/api/index-manager/api/v1/indices/demo_raw_content/_query"},
		{"GET", "/api/index-manager/api/v1/content/_count?index_type=classified_content"},
		{"GET", "/api/index-manager/api/v1/audit"},
		{"GET", "/api/index-manager/api/v1/auth/me"},
		{"POST", "/api/index-manager/api/v1/auth/login"},
		{"POST", "/api/classifier/api/v1/classify"},
		{"GET", "/api/classifier/api/v1/dlq"},
		{"GET", "/api/classifier/api/v1/sources"},
	}
	for _, off := range []string{"rules=off,index_manager=off", ""} {
		features, err := server.ParseFeatures(off)
		must(t, err)
		if (off == "") != features.Enabled(server.FeatureRules) || (off == "") != features.Enabled(server.FeatureIndexManager) {
			t.Fatalf("ParseFeatures(%q) = %v", off, features)
		}
		b := setupCfg(t, func(c *server.Config) { c.Features = features })

		_, _, body := get(t, b.srv.URL+"/api/features")
		var flags struct {
			Features map[string]bool `json:"features"`
			Disabled []string        `json:"disabled"`
		}
		must(t, json.Unmarshal([]byte(body), &flags))
		for _, f := range []string{"rules", "index_manager"} {
			if on, ok := flags.Features[f]; !ok || on != (off == "") || slices.Contains(flags.Disabled, f) == (off == "") {
				t.Errorf("DASHBOARD_FEATURES=%q: /api/features says %s: %s", off, f, body)
			}
		}

		do := func(method, path string) (*http.Response, []byte) {
			req, _ := http.NewRequest(method, b.srv.URL+path, strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer "+token(t))
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			must(t, err)
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			return res, raw
		}
		for _, c := range refused {
			res, raw := do(c.method, c.path)
			if off == "" {
				if res.StatusCode != http.StatusOK {
					t.Errorf("%s %s with every feature on = %d %s, want forwarded", c.method, c.path, res.StatusCode, raw)
				}
				continue
			}
			if res.StatusCode != http.StatusForbidden || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
				t.Errorf("%s %s with %s=off = %d %q, want 403 JSON", c.method, c.path, c.feature, res.StatusCode, res.Header.Get("Content-Type"))
				continue
			}
			if c.method == http.MethodHead {
				continue
			}
			var e struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(raw, &e); err != nil || e.Error.Code != "feature_disabled" ||
				!strings.Contains(e.Error.Message, c.feature+"=off") || !strings.Contains(e.Error.Message, "DASHBOARD_FEATURES") {
				t.Errorf("%s %s with %s=off: body %s, want feature_disabled naming %s=off", c.method, c.path, c.feature, raw, c.feature)
			}
		}
		for _, c := range passed {
			if res, raw := do(c.method, c.path); res.StatusCode != http.StatusOK {
				t.Errorf("DASHBOARD_FEATURES=%q: %s %s = %d %s, want forwarded", off, c.method, c.path, res.StatusCode, raw)
			}
		}
		if off != "" {
			seen := len(*b.upstreams["classifier"]) + len(*b.upstreams["index-manager"])
			if seen != len(passed) {
				t.Errorf("the upstreams saw %d requests, want only the %d that pass: %v %v", seen, len(passed),
					*b.upstreams["classifier"], *b.upstreams["index-manager"])
			}
		}
	}
}
