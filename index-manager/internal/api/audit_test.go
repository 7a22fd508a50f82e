package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/auth"
)

func TestAuditListFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	bob, _, err := b.authn.Issue("bob", auth.RoleAdmin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 3)
	for i := range names {
		names[i] = fmt.Sprintf("%s_a%d_raw_content", b.prefix, i)
		if r := b.do(request{Method: "POST", Path: "/api/v1/indices", Body: map[string]any{"name": names[i]}}); r.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
	}
	if r := b.do(request{Method: "POST", Path: "/api/v1/indices/" + names[0] + "/_refresh", Token: &bob}); r.Status != http.StatusOK {
		t.Fatalf("refresh: %d", r.Status)
	}
	if r := b.do(request{Method: "DELETE", Path: "/api/v1/indices/" + names[1], Token: &bob}); r.Status != http.StatusOK {
		t.Fatalf("delete: %d", r.Status)
	}

	list := func(q string) api.AuditListResponse {
		t.Helper()
		r := b.do(request{Method: "GET", Path: "/api/v1/audit" + q})
		if r.Status != http.StatusOK {
			t.Fatalf("audit%s: %d %s", q, r.Status, r.Body)
		}
		var out api.AuditListResponse
		r.decode(t, &out)
		return out
	}
	if got := list(""); len(got.Entries) != 5 || got.Entries[0].Action != "delete" || got.NextBeforeID != 0 {
		t.Fatalf("all entries: %+v", got)
	}
	if got := list("?actor=bob"); len(got.Entries) != 2 {
		t.Fatalf("actor=bob: %+v", got)
	}
	if got := list("?action=create&actor=" + adminUser); len(got.Entries) != 3 {
		t.Fatalf("action=create: %+v", got)
	}
	if got := list("?index=" + names[0]); len(got.Entries) != 2 {
		t.Fatalf("index filter: %+v", got)
	}
	if got := list("?outcome=failure"); len(got.Entries) != 0 {
		t.Fatalf("outcome=failure: %+v", got)
	}
	if got := list("?since=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))); len(got.Entries) != 0 {
		t.Fatalf("since the future: %+v", got)
	}
	if got := list("?until=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))); len(got.Entries) != 5 {
		t.Fatalf("until the future: %+v", got)
	}
	// Keyset pages of two cover all five entries once, newest first. (Same
	// walk as infrastructure/audit's test of the shared handler; this one
	// pages the index-manager's own route and response type.)
	var ids []int64
	q := "?limit=2"
	for range 5 {
		page := list(q)
		for _, e := range page.Entries {
			ids = append(ids, e.ID)
		}
		if page.NextBeforeID == 0 {
			break
		}
		q = fmt.Sprintf("?limit=2&before_id=%d", page.NextBeforeID)
	}
	if len(ids) != 5 {
		t.Fatalf("paged ids %v, want 5", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] >= ids[i-1] {
			t.Fatalf("ids not newest first: %v", ids)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=501", "?limit=x", "?before_id=-1", "?action=drop", "?outcome=maybe", "?since=yesterday"} {
		if r := b.do(request{Method: "GET", Path: "/api/v1/audit" + q}); r.Status != http.StatusBadRequest {
			t.Errorf("audit%s: %d, want 400", q, r.Status)
		}
	}
}
