package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/audit"
	"github.com/north-cloud/infrastructure/auth"
)

// TestSilenceAuditRecordsWhoWhatAndUntilWhen: the record of a silence and
// of its expiry lands in the audit_log table with the token's subject as
// the actor (a body cannot name another), the alert name as target and the
// silence's id, matchers and end; a viewer is refused (and that refusal is
// itself recorded as denied), bad records get 400.
func TestSilenceAuditRecordsWhoWhatAndUntilWhen(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	carol, _, err := b.authn.Issue("carol", auth.RoleOperator, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	viewer, _, err := b.authn.Issue("vera", auth.RoleViewer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	alert := "SilenceTest_" + strings.ReplaceAll(b.prefix, "-", "_")
	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	body := map[string]any{
		"action": "silence", "silence_id": "0d6c3a4e-1111-4222-8333-944455556666", "alertname": alert,
		"matchers": []map[string]string{{"name": "alertname", "value": alert}, {"name": "severity", "value": "critical"}},
		"ends_at":  until.Format(time.RFC3339), "comment": "deploying the fix", "created_by": "mallory",
	}
	// An unknown field (created_by) is refused: the actor is the token's.
	if r := b.do(request{Method: "POST", Path: "/api/v1/audit/silences", Body: body, Token: &carol}); r.Status != http.StatusBadRequest {
		t.Fatalf("record with created_by: %d %s, want 400", r.Status, r.Body)
	}
	delete(body, "created_by")
	if r := b.do(request{Method: "POST", Path: "/api/v1/audit/silences", Body: body, Token: &viewer}); r.Status != http.StatusForbidden {
		t.Fatalf("viewer: %d %s, want 403", r.Status, r.Body)
	}
	for name, bad := range map[string]map[string]any{
		"unknown action": {"action": "mute", "silence_id": "x", "alertname": alert, "ends_at": until.Format(time.RFC3339)},
		"no silence id":  {"action": "silence", "silence_id": "", "alertname": alert, "ends_at": until.Format(time.RFC3339)},
		"no alert name":  {"action": "silence", "silence_id": "x", "alertname": "", "ends_at": until.Format(time.RFC3339)},
		"no end":         {"action": "silence", "silence_id": "x", "alertname": alert},
	} {
		if r := b.do(request{Method: "POST", Path: "/api/v1/audit/silences", Body: bad, Token: &carol}); r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, r.Status, r.Body)
		}
	}
	if r := b.do(request{Method: "POST", Path: "/api/v1/audit/silences", Body: body, Token: &carol}); r.Status != http.StatusCreated {
		t.Fatalf("record silence: %d %s", r.Status, r.Body)
	}
	body["action"] = "expire_silence"
	if r := b.do(request{Method: "POST", Path: "/api/v1/audit/silences", Body: body, Token: &carol}); r.Status != http.StatusCreated {
		t.Fatalf("record expiry: %d %s", r.Status, r.Body)
	}

	repo, err := audit.NewRepository(b.db)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := repo.List(context.Background(), audit.Filter{Target: alert, Limit: audit.ListLimitMax})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("audit entries of %s: %+v, want the silence and its expiry", alert, entries)
	}
	expiry, set := entries[0], entries[1]
	for _, e := range []audit.Entry{set, expiry} {
		if e.Actor != "carol" || e.Role != "operator" || e.Outcome != audit.OutcomeSuccess || e.Route != "/api/v1/audit/silences" {
			t.Errorf("entry %+v: want actor carol (the token's), role operator, success", e)
		}
		if e.Parameters["silence_id"] != "0d6c3a4e-1111-4222-8333-944455556666" || e.Parameters["ends_at"] != until.Format(time.RFC3339) {
			t.Errorf("entry parameters %+v: want the silence id and its end", e.Parameters)
		}
	}
	if set.Action != audit.ActionSilence || !strings.Contains(set.Summary, "until "+until.Format(time.RFC3339)) || !strings.Contains(set.Summary, "deploying the fix") {
		t.Errorf("silence entry %+v", set)
	}
	if expiry.Action != audit.ActionExpireSilence || !strings.HasPrefix(expiry.Summary, "expired the silence of "+alert) {
		t.Errorf("expiry entry %+v", expiry)
	}
	// The list route filters by the new actions.
	r := b.do(request{Method: "GET", Path: "/api/v1/audit?action=silence&actor=carol"})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), alert) {
		t.Fatalf("audit?action=silence: %d %s", r.Status, r.Body)
	}
}
