package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/auth"
)

// TestDeleteNeedsConfirmationAndIsAudited: an index of 1,000 documents is
// only deleted with ?confirm=true, and the audit log records both attempts
// with the caller's identity from the token.
func TestDeleteNeedsConfirmationAndIsAudited(t *testing.T) {
	t.Parallel()
	b := setup(t, options{protected: nil})
	big := b.prefix + "_big_raw_content"
	b.createIndex(big)
	b.indexDocs(big, 1000)
	token, _, err := b.authn.Issue("alice@example.org", auth.RoleAdmin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	r := b.do(request{Method: "DELETE", Path: "/api/v1/indices/" + big, Token: &token})
	if r.Status != http.StatusBadRequest || r.errorCode(t) != "confirmation_required" {
		t.Fatalf("unconfirmed delete: %d %s, want 400 confirmation_required", r.Status, r.Body)
	}
	if !b.exists(big) {
		t.Fatal("index deleted without confirmation")
	}
	r = b.do(request{Method: "DELETE", Path: "/api/v1/indices/" + big + "?confirm=maybe", Token: &token})
	if r.Status != http.StatusBadRequest {
		t.Fatalf("confirm=maybe: %d, want 400", r.Status)
	}
	r = b.do(request{Method: "DELETE", Path: "/api/v1/indices/" + big + "?confirm=true", Token: &token})
	if r.Status != http.StatusOK {
		t.Fatalf("confirmed delete: %d %s", r.Status, r.Body)
	}
	if b.exists(big) {
		t.Fatal("index still exists")
	}
	entries := b.auditEntries(big)
	if len(entries) != 2 {
		t.Fatalf("audit entries %+v, want 2", entries)
	}
	done, refused := entries[0], entries[1]
	if done.Actor != "alice@example.org" || done.Action != "delete" || done.Outcome != "success" || *done.StatusCode != 200 ||
		done.Parameters["confirm"] != true || done.FinishedAt == nil || done.RequestID == "" {
		t.Errorf("audit of the delete: %+v", done)
	}
	if refused.Actor != "alice@example.org" || refused.Outcome != "failure" || *refused.StatusCode != 400 || refused.Parameters["confirm"] != false {
		t.Errorf("audit of the refused delete: %+v", refused)
	}

	// Small indices go without confirmation; unknown ones are 404.
	small := b.prefix + "_small_classified_content"
	b.createIndex(small)
	b.indexDocs(small, 999)
	if r := b.do(request{Method: "DELETE", Path: "/api/v1/indices/" + small}); r.Status != http.StatusOK || b.exists(small) {
		t.Fatalf("delete of 999 documents: %d %s", r.Status, r.Body)
	}
	if r := b.do(request{Method: "DELETE", Path: "/api/v1/indices/" + small}); r.Status != http.StatusNotFound {
		t.Fatalf("delete of a missing index: %d %s, want 404", r.Status, r.Body)
	}

	// A closed index has no document count: it needs confirmation too.
	closed := b.prefix + "_closed_raw_content"
	b.createIndex(closed)
	b.indexDocs(closed, 5)
	res, err := b.es.Indices.Close([]string{closed})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if r := b.do(request{Method: "DELETE", Path: "/api/v1/indices/" + closed}); r.Status != http.StatusBadRequest || r.errorCode(t) != "confirmation_required" {
		t.Fatalf("unconfirmed delete of a closed index: %d %s, want 400", r.Status, r.Body)
	}
	if r := b.do(request{Method: "DELETE", Path: "/api/v1/indices/" + closed + "?confirm=true"}); r.Status != http.StatusOK || b.exists(closed) {
		t.Fatalf("confirmed delete of a closed index: %d %s", r.Status, r.Body)
	}
}

func TestProtectedIndexCannotBeChanged(t *testing.T) {
	t.Parallel()
	b2 := setup(t, options{protected: []string{"{prefix}_kept_raw_content"}})
	kept := b2.prefix + "_kept_raw_content"
	b2.createIndex(kept)
	for _, call := range []request{
		{Method: "DELETE", Path: "/api/v1/indices/" + kept + "?confirm=true"},
		{Method: "POST", Path: "/api/v1/indices/" + kept + "/_refresh"},
		{Method: "POST", Path: "/api/v1/indices", Body: map[string]any{"name": kept}},
	} {
		if r := b2.do(call); r.Status != http.StatusForbidden || r.errorCode(t) != "protected_index" {
			t.Errorf("%s %s: %d %s, want 403", call.Method, call.Path, r.Status, r.Body)
		}
	}
	if !b2.exists(kept) {
		t.Fatal("protected index deleted")
	}
	// Reading a protected index is allowed.
	if r := b2.do(request{Method: "GET", Path: "/api/v1/indices/" + kept}); r.Status != http.StatusOK {
		t.Fatalf("read protected: %d %s", r.Status, r.Body)
	}
}

func TestRefreshIsAudited(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "_r_raw_content"
	b.createIndex(name)
	if r := b.do(request{Method: "POST", Path: "/api/v1/indices/" + name + "/_refresh"}); r.Status != http.StatusOK {
		t.Fatalf("refresh: %d %s", r.Status, r.Body)
	}
	missing := b.prefix + "_nope_raw_content"
	if r := b.do(request{Method: "POST", Path: "/api/v1/indices/" + missing + "/_refresh"}); r.Status != http.StatusNotFound {
		t.Fatalf("refresh missing: %d %s, want 404", r.Status, r.Body)
	}
	if e := b.auditEntries(name); len(e) != 1 || e[0].Action != "refresh" || e[0].Actor != adminUser || e[0].Outcome != "success" {
		t.Fatalf("audit of refresh: %+v", e)
	}
	if e := b.auditEntries(missing); len(e) != 1 || e[0].Outcome != "failure" || *e[0].StatusCode != 404 {
		t.Fatalf("audit of failed refresh: %+v", e)
	}
}
