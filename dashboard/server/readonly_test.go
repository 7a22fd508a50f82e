package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestReadOnlyRefusesChangesAtTheProxy: with DASHBOARD_READ_ONLY=true no
// method but GET and HEAD reaches the three APIs (403 read_only, the
// upstream never sees it); sign-in and the reads sent by POST still pass.
// Without it, the same requests are forwarded.
func TestReadOnlyRefusesChangesAtTheProxy(t *testing.T) {
	t.Parallel()
	refused := []struct{ method, path string }{
		{"POST", "/api/classifier/api/v1/rules"},
		{"PUT", "/api/classifier/api/v1/rules/1"},
		{"DELETE", "/api/classifier/api/v1/dlq/1"},
		{"POST", "/api/classifier/api/v1/dlq/requeue"},
		{"PATCH", "/api/classifier/api/v1/rules/1"},
		{"POST", "/api/publisher/api/v1/outbox/retry"},
		{"DELETE", "/api/index-manager/api/v1/indices/x_raw_content"},
		{"POST", "/api/index-manager/api/v1/indices"},
		{"POST", "/api/index-manager/api/v1/indices/a/_refresh"},
	}
	passed := []struct{ method, path string }{
		{"GET", "/api/classifier/api/v1/rules"},
		{"HEAD", "/api/publisher/api/v1/outbox"},
		{"POST", "/api/index-manager/api/v1/auth/login"},
		{"POST", "/api/index-manager/api/v1/auth/refresh"},
		{"POST", "/api/index-manager/api/v1/auth/logout"},
		{"POST", "/api/index-manager/api/v1/indices/x_raw_content/_query"},
		{"POST", "/api/classifier/api/v1/classify"},
		{"POST", "/api/classifier/api/v1/rules/test"},
	}
	for _, readOnly := range []bool{true, false} {
		b := setup(t, readOnly)
		for _, c := range refused {
			req, _ := http.NewRequest(c.method, b.srv.URL+c.path, strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer "+issue(t, testAuth))
			res, err := http.DefaultClient.Do(req)
			must(t, err)
			var body struct{ Error struct{ Code string } }
			_ = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close()
			if readOnly && (res.StatusCode != http.StatusForbidden || body.Error.Code != "read_only") {
				t.Errorf("read-only %s %s = %d %q, want 403 read_only", c.method, c.path, res.StatusCode, body.Error.Code)
			}
			if !readOnly && res.StatusCode != http.StatusOK {
				t.Errorf("%s %s = %d, want forwarded", c.method, c.path, res.StatusCode)
			}
		}
		for _, c := range passed {
			wantForwarded(t, b.srv.URL, c.method, c.path, fmt.Sprintf("read-only %t", readOnly))
		}
		n := 0
		for _, seen := range b.upstreams {
			n += len(*seen)
		}
		if want := len(passed); readOnly && n != want {
			t.Errorf("the upstreams saw %d requests, want only the %d that pass", n, want)
		}
	}
}
