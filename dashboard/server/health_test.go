package server_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	server "github.com/north-cloud/dashboard-server"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/testenv"
)

// postAlert sends Alertmanager an alert of alertname, as Prometheus would,
// firing until ends (resolved when ends is now).
func postAlert(t *testing.T, am, alertname string, ends time.Time) {
	t.Helper()
	body, _ := json.Marshal([]map[string]any{{
		"labels":      map[string]string{"alertname": alertname, "severity": "warning", "job": "health-test"},
		"annotations": map[string]string{"summary": "the dashboard server's health test"},
		"startsAt":    time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		"endsAt":      ends.UTC().Format(time.RFC3339),
	}})
	res, err := http.Post(am+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("post an alert to alertmanager: %d", res.StatusCode)
	}
}

// closedURL is an address nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	return "http://" + addr
}

func health(t *testing.T, b *silenceBundle) (server.HealthSummary, string) {
	t.Helper()
	status, body := b.do(t, auth.RoleViewer, http.MethodGet, "/api/health", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /api/health: %d %s", status, body)
	}
	var h server.HealthSummary
	must(t, json.Unmarshal(body, &h))
	return h, string(body)
}

func states(h server.HealthSummary) map[string]string {
	out := map[string]string{}
	for _, s := range h.Services {
		out[s.Name] = s.State
	}
	return out
}

// TestHealthAgainstAlertmanager: GET /api/health names each service up,
// not ready or down, and counts a real Alertmanager's firing alerts; an
// alert silenced through the dashboard leaves the firing count at once
// (not after the answer's seconds in the cache) and is counted silenced.
func TestHealthAgainstAlertmanager(t *testing.T) {
	t.Parallel()
	am := alertmanagerURL(t)
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(ready.Close)
	// The index-manager is the audit stub, which has no /ready (404: not ready).
	b := silenceSetup(t, am, func(c *server.Config) {
		c.ClassifierURL = ready.URL
		c.PublisherURL = closedURL(t)
	})
	alert := testenv.UniqueName("HealthTest")
	expireAll(t, am, alert)
	t.Cleanup(func() { postAlert(t, am, alert, time.Now()) })

	if status, _ := b.do(t, "", http.MethodGet, "/api/health", nil); status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", status)
	}
	if status, _ := b.do(t, auth.RoleViewer, http.MethodGet, "/api/health?x=1", nil); status != http.StatusBadRequest {
		t.Errorf("a parameter: %d, want 400", status)
	}
	if status, _ := b.do(t, auth.RoleAdmin, http.MethodPost, "/api/health", nil); status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", status)
	}

	h, _ := health(t, b)
	want := map[string]string{"classifier": "up", "publisher": "down", "index-manager": "not_ready", "prometheus": "not_configured", "alertmanager": "up"}
	if got := states(h); !maps.Equal(got, want) {
		t.Errorf("services: %v, want %v", got, want)
	}
	for _, s := range h.Services {
		if s.State != "up" && s.Detail == "" {
			t.Errorf("%s is %s without a reason", s.Name, s.State)
		}
	}
	if h.Alerts.State != "ok" || h.Alerts.Firing == nil || h.Alerts.Silenced == nil || slices.Contains(h.Alerts.Alertnames, alert) {
		t.Fatalf("alerts before: %+v", h.Alerts)
	}

	// Firing: counted once the cached answer (5 s) is over.
	postAlert(t, am, alert, time.Now().Add(10*time.Minute))
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, _ = health(t, b)
		if slices.Contains(h.Alerts.Alertnames, alert) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert %s never counted firing: %+v", alert, h.Alerts)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if *h.Alerts.Firing < 1 {
		t.Fatalf("firing %d with %s firing", *h.Alerts.Firing, alert)
	}

	// Silenced through the dashboard: out of the firing names in the very next answer.
	status, body := b.do(t, auth.RoleOperator, http.MethodPost, "/api/alerts/silences",
		map[string]any{"alertname": alert, "duration": "1h", "comment": "the health test"})
	if status != http.StatusCreated {
		t.Fatalf("silence: %d %s", status, body)
	}
	h, _ = health(t, b)
	if slices.Contains(h.Alerts.Alertnames, alert) || *h.Alerts.Silenced < 1 {
		t.Fatalf("after the silence: %+v, want %s silenced", h.Alerts, alert)
	}
}

// TestHealthWithoutAlertmanager: with no ALERTMANAGER_URL, or one that
// does not answer, the alert counts are null with the reason, never 0.
func TestHealthWithoutAlertmanager(t *testing.T) {
	t.Parallel()
	for name, amURL := range map[string]string{"not_configured": "", "unavailable": closedURL(t)} {
		b := silenceSetup(t, amURL, nil)
		h, raw := health(t, b)
		if h.Alerts.State != name || h.Alerts.Firing != nil || h.Alerts.Silenced != nil || h.Alerts.Detail == "" ||
			!strings.Contains(raw, `"firing":null`) {
			t.Errorf("%s: alerts %s, want state %s, null counts and a reason", name, raw, name)
		}
		wantAM := map[string]string{"not_configured": "not_configured", "unavailable": "down"}[name]
		if got := states(h)["alertmanager"]; got != wantAM {
			t.Errorf("%s: alertmanager %s, want %s", name, got, wantAM)
		}
	}
}
