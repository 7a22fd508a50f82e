package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	server "github.com/north-cloud/dashboard-server"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/openapi"
	"github.com/north-cloud/infrastructure/testenv"
)

// alertmanagerURL is the real Alertmanager of scripts/services.sh
// (ALERTMANAGER_URL); under CI=true a missing one fails the test.
func alertmanagerURL(t *testing.T) string {
	t.Helper()
	u := strings.TrimRight(testenv.Env(t, "ALERTMANAGER_URL", "alertmanager"), "/")
	if status, _, err := testenv.HTTPGet(u+"/-/ready", 5*time.Second); err != nil || status != http.StatusOK {
		testenv.Unavailable(t, "alertmanager at "+u, fmt.Errorf("/-/ready: %d %v", status, err))
	}
	return u
}

// auditLog stands in for the index-manager's POST /api/v1/audit/silences
// (its rows in Postgres are index-manager/internal/api's
// TestSilenceAuditRecordsWhoWhatAndUntilWhen): it keeps what it was sent
// and answers 201, or 503 when down is set.
type auditLog struct {
	mu      sync.Mutex
	records []auditRecord
	down    bool
}

type auditRecord struct {
	Auth string
	Body map[string]any
}

func (a *auditLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/v1/audit/silences" {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"code":"database_unavailable","message":"the audit log is unavailable"}}`)
		return
	}
	a.records = append(a.records, auditRecord{Auth: r.Header.Get("Authorization"), Body: body})
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"recorded":true}`)
}

func (a *auditLog) last(t *testing.T) auditRecord {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.records) == 0 {
		t.Fatal("nothing was sent to the audit log")
	}
	return a.records[len(a.records)-1]
}

type silenceBundle struct {
	srv   *httptest.Server
	am    string
	audit *auditLog
	doc   *openapi.Document
	// tokens by role; the subject is the role's name with "-<test>".
	tokens map[auth.Role]string
}

func silenceSetup(t *testing.T, amURL string, edit func(*server.Config)) *silenceBundle {
	t.Helper()
	b := &silenceBundle{am: amURL, audit: &auditLog{}, tokens: map[auth.Role]string{}}
	im := httptest.NewServer(b.audit)
	t.Cleanup(im.Close)
	cfg := server.Config{Dist: t.TempDir(), Auth: testAuth, IndexManagerURL: im.URL, AlertmanagerURL: amURL}
	if edit != nil {
		edit(&cfg)
	}
	h, err := server.New(cfg, testenv.Logger(t))
	must(t, err)
	b.srv = httptest.NewServer(h)
	t.Cleanup(b.srv.Close)
	t.Cleanup(h.Close)
	a, err := auth.New(testAuth)
	must(t, err)
	for _, role := range auth.Roles() {
		tok, _, err := a.Issue(string(role)+"-silences", role, time.Hour)
		must(t, err)
		b.tokens[role] = tok
	}
	b.doc = b.openAPI(t)
	return b
}

func (b *silenceBundle) openAPI(t *testing.T) *openapi.Document {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/api/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+b.tokens[auth.RoleViewer])
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	doc, err := openapi.Load(body)
	must(t, err)
	return doc
}

// do sends a request as role ("" for none) and checks the answer against
// the server's OpenAPI document.
func (b *silenceBundle) do(t *testing.T, role auth.Role, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		must(t, err)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, b.srv.URL+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if role != "" {
		req.Header.Set("Authorization", "Bearer "+b.tokens[role])
	}
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if err := b.doc.CheckResponse(req, res.StatusCode, res.Header, out); err != nil {
		t.Errorf("%s %s: %v", method, path, err)
	}
	return res.StatusCode, out
}

// amSilence reads a silence straight from Alertmanager.
func (b *silenceBundle) amSilence(t *testing.T, id string) map[string]any {
	t.Helper()
	status, body, err := testenv.HTTPGet(b.am+"/api/v2/silence/"+id, 10*time.Second)
	if err != nil || status != http.StatusOK {
		t.Fatalf("alertmanager silence %s: %d %v %s", id, status, err, body)
	}
	var out map[string]any
	must(t, json.Unmarshal([]byte(body), &out))
	return out
}

// expireAll expires every unexpired silence of alertname in Alertmanager
// at the end of the test (the Alertmanager is shared).
func expireAll(t *testing.T, am, alertname string) {
	t.Cleanup(func() {
		_, body, err := testenv.HTTPGet(am+"/api/v2/silences?filter=alertname%3D%22"+alertname+"%22", 10*time.Second)
		if err != nil {
			return
		}
		var list []struct {
			ID     string                 `json:"id"`
			Status struct{ State string } `json:"status"`
		}
		_ = json.Unmarshal([]byte(body), &list)
		for _, s := range list {
			if s.Status.State != "expired" {
				req, _ := http.NewRequest(http.MethodDelete, am+"/api/v2/silence/"+s.ID, nil)
				if res, err := http.DefaultClient.Do(req); err == nil {
					res.Body.Close()
				}
			}
		}
	})
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not an error answer: %s", body)
	}
	return e.Error.Code
}

// TestSilencesAgainstAlertmanager sets, lists and expires a silence in a
// real Alertmanager through the dashboard server: created_by is the
// token's subject whatever the body says, a viewer may list but not set or
// expire, bad input gets 400 with a reason, an unknown silence 404, and
// each set and expiry is sent to the audit log with the caller's token.
func TestSilencesAgainstAlertmanager(t *testing.T) {
	t.Parallel()
	am := alertmanagerURL(t)
	b := silenceSetup(t, am, nil)
	alert := testenv.UniqueName("SilenceTest")
	expireAll(t, am, alert)

	// No token: 401. A viewer: 403 to set, 200 to list.
	if status, _ := b.do(t, "", http.MethodGet, "/api/alerts/silences", nil); status != http.StatusUnauthorized {
		t.Errorf("list without a token: %d, want 401", status)
	}
	good := map[string]any{"alertname": alert, "matchers": []map[string]string{{"name": "severity", "value": "critical"}},
		"duration": "2h", "comment": "deploying the fix"}
	if status, body := b.do(t, auth.RoleViewer, http.MethodPost, "/api/alerts/silences", good); status != http.StatusForbidden {
		t.Errorf("viewer sets a silence: %d %s, want 403", status, body)
	}

	// Bad input: 400 with a reason, nothing reaches Alertmanager.
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for name, bad := range map[string]map[string]any{
		"no alertname":          {"alertname": " ", "duration": "2h", "comment": "x"},
		"end in the past":       {"alertname": alert, "ends_at": past, "comment": "x"},
		"longer than 7 days":    {"alertname": alert, "duration": "169h", "comment": "x"},
		"no comment":            {"alertname": alert, "duration": "2h", "comment": ""},
		"duration and ends_at":  {"alertname": alert, "duration": "2h", "ends_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "comment": "x"},
		"neither":               {"alertname": alert, "comment": "x"},
		"bad duration":          {"alertname": alert, "duration": "two hours", "comment": "x"},
		"bad matcher name":      {"alertname": alert, "duration": "2h", "comment": "x", "matchers": []map[string]string{{"name": "se-verity", "value": "critical"}}},
		"empty matcher value":   {"alertname": alert, "duration": "2h", "comment": "x", "matchers": []map[string]string{{"name": "severity", "value": ""}}},
		"alertname as matcher":  {"alertname": alert, "duration": "2h", "comment": "x", "matchers": []map[string]string{{"name": "alertname", "value": "Other"}}},
		"created_by in body":    {"alertname": alert, "duration": "2h", "comment": "x", "created_by": "mallory"},
		"shorter than a minute": {"alertname": alert, "duration": "10s", "comment": "x"},
	} {
		status, body := b.do(t, auth.RoleOperator, http.MethodPost, "/api/alerts/silences", bad)
		if status != http.StatusBadRequest || !strings.Contains(string(body), `"message"`) {
			t.Errorf("%s: %d %s, want 400 with a reason", name, status, body)
		}
	}
	b.audit.mu.Lock()
	sent := len(b.audit.records)
	b.audit.mu.Unlock()
	if sent != 0 {
		t.Fatalf("refused requests reached the audit log: %d records", sent)
	}

	// An operator sets it: Alertmanager holds it with the token's subject.
	status, body := b.do(t, auth.RoleOperator, http.MethodPost, "/api/alerts/silences", good)
	if status != http.StatusCreated {
		t.Fatalf("operator sets a silence: %d %s", status, body)
	}
	var sil server.Silence
	must(t, json.Unmarshal(body, &sil))
	if sil.CreatedBy != "operator-silences" || sil.Alertname != alert || sil.State != "active" ||
		len(sil.Matchers) != 1 || sil.Matchers[0] != (server.SilenceMatcher{Name: "severity", Value: "critical"}) {
		t.Fatalf("silence set: %+v", sil)
	}
	if d := time.Until(sil.EndsAt); d < 119*time.Minute || d > 121*time.Minute {
		t.Errorf("ends_at %s: want two hours from now", sil.EndsAt)
	}
	held := b.amSilence(t, sil.ID)
	if held["createdBy"] != "operator-silences" || held["comment"] != "deploying the fix" {
		t.Errorf("alertmanager holds %v", held)
	}
	rec := b.audit.last(t)
	if rec.Auth != "Bearer "+b.tokens[auth.RoleOperator] || rec.Body["action"] != "silence" || rec.Body["silence_id"] != sil.ID ||
		rec.Body["alertname"] != alert || rec.Body["ends_at"] != sil.EndsAt.Format(time.RFC3339) {
		t.Errorf("audit record of the silence: %+v", rec)
	}

	// Anyone reads it in the list.
	status, body = b.do(t, auth.RoleViewer, http.MethodGet, "/api/alerts/silences", nil)
	var list server.SilenceList
	must(t, json.Unmarshal(body, &list))
	found := false
	for _, s := range list.Silences {
		found = found || s.ID == sil.ID
	}
	if status != http.StatusOK || !found {
		t.Fatalf("list: %d, silence %s not in %s", status, sil.ID, body)
	}

	// Expiring: a viewer is refused, a malformed id is 400, an unknown 404.
	if status, _ := b.do(t, auth.RoleViewer, http.MethodDelete, "/api/alerts/silences/"+sil.ID, nil); status != http.StatusForbidden {
		t.Errorf("viewer expires: %d, want 403", status)
	}
	if status, body := b.do(t, auth.RoleOperator, http.MethodDelete, "/api/alerts/silences/not-a-uuid", nil); status != http.StatusBadRequest {
		t.Errorf("malformed id: %d %s, want 400", status, body)
	}
	if status, body := b.do(t, auth.RoleOperator, http.MethodDelete, "/api/alerts/silences/00000000-0000-4000-8000-000000000000", nil); status != http.StatusNotFound || errorCode(t, body) != "unknown_silence" {
		t.Errorf("unknown id: %d %s, want 404 unknown_silence", status, body)
	}
	if status, body := b.do(t, auth.RoleAdmin, http.MethodDelete, "/api/alerts/silences/"+sil.ID, nil); status != http.StatusNoContent {
		t.Fatalf("admin expires: %d %s", status, body)
	}
	if st := b.amSilence(t, sil.ID)["status"].(map[string]any)["state"]; st != "expired" {
		t.Errorf("alertmanager state after expiry: %v", st)
	}
	rec = b.audit.last(t)
	if rec.Auth != "Bearer "+b.tokens[auth.RoleAdmin] || rec.Body["action"] != "expire_silence" || rec.Body["silence_id"] != sil.ID || rec.Body["alertname"] != alert {
		t.Errorf("audit record of the expiry: %+v", rec)
	}
	if status, body := b.do(t, auth.RoleOperator, http.MethodDelete, "/api/alerts/silences/"+sil.ID, nil); status != http.StatusConflict {
		t.Errorf("expire again: %d %s, want 409", status, body)
	}
	// Gone from the list (the audit log keeps it).
	_, body = b.do(t, auth.RoleViewer, http.MethodGet, "/api/alerts/silences", nil)
	if strings.Contains(string(body), sil.ID) {
		t.Errorf("an expired silence is listed: %s", body)
	}
}

// TestSilenceTheAuditLogRefusesIsUndone: when the audit log does not take
// the record, the silence just set is expired again and the caller gets 502.
func TestSilenceTheAuditLogRefusesIsUndone(t *testing.T) {
	t.Parallel()
	am := alertmanagerURL(t)
	b := silenceSetup(t, am, nil)
	alert := testenv.UniqueName("SilenceUndo")
	expireAll(t, am, alert)
	b.audit.mu.Lock()
	b.audit.down = true
	b.audit.mu.Unlock()
	status, body := b.do(t, auth.RoleOperator, http.MethodPost, "/api/alerts/silences",
		map[string]any{"alertname": alert, "ends_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "comment": "x"})
	if status != http.StatusBadGateway || errorCode(t, body) != "audit_unavailable" {
		t.Fatalf("set with the audit log down: %d %s, want 502 audit_unavailable", status, body)
	}
	_, list, err := testenv.HTTPGet(am+"/api/v2/silences?filter=alertname%3D%22"+alert+"%22", 10*time.Second)
	must(t, err)
	var held []struct {
		Status struct{ State string } `json:"status"`
	}
	must(t, json.Unmarshal([]byte(list), &held))
	if len(held) != 1 || held[0].Status.State != "expired" {
		t.Fatalf("alertmanager after an unrecorded silence: %s, want it expired", list)
	}
}

// TestSilencesRefusedWhenReadOnlyOrUnconfigured: a read-only dashboard
// refuses to set one (403), a dashboard without ALERTMANAGER_URL answers 503.
func TestSilencesRefusedWhenReadOnlyOrUnconfigured(t *testing.T) {
	t.Parallel()
	am := alertmanagerURL(t)
	ro := silenceSetup(t, am, func(c *server.Config) { c.ReadOnly = true })
	good := map[string]any{"alertname": "ReadOnlyTest", "duration": "1h", "comment": "x"}
	if status, body := ro.do(t, auth.RoleAdmin, http.MethodPost, "/api/alerts/silences", good); status != http.StatusForbidden {
		t.Errorf("read-only: %d %s, want 403", status, body)
	}
	none := silenceSetup(t, "", nil)
	if status, body := none.do(t, auth.RoleViewer, http.MethodGet, "/api/alerts/silences", nil); status != http.StatusServiceUnavailable {
		t.Errorf("no ALERTMANAGER_URL: %d %s, want 503", status, body)
	}
	req, _ := http.NewRequest(http.MethodPut, none.srv.URL+"/api/alerts/silences", nil)
	req.Header.Set("Authorization", "Bearer "+none.tokens[auth.RoleOperator])
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, POST" {
		t.Errorf("PUT: %d Allow %q, want 405 Allow GET, POST", res.StatusCode, res.Header.Get("Allow"))
	}
}
