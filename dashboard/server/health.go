package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The health strip's answer (GET /api/health): each service up or down and
// Alertmanager's firing alerts that no silence or inhibition holds, in one
// request per refresh of every tab, shared by every user for a few seconds.
const (
	// healthCacheTTL: one answer serves every user and tab this long.
	healthCacheTTL = 5 * time.Second
	// healthCallTimeout bounds each probe: a service slower than this to
	// say it is ready is shown down rather than holding the strip.
	healthCallTimeout = 3 * time.Second
	// healthAlertsMaxBytes bounds Alertmanager's list of alerts.
	healthAlertsMaxBytes = 8 << 20
)

// ServiceHealth is one service as the strip shows it.
type ServiceHealth struct {
	Name string `json:"name"`
	// State is up (its readiness probe answered 200), not_ready (it
	// answered, with another status), down (it did not answer) or
	// not_configured (Prometheus or Alertmanager without a URL).
	State string `json:"state"`
	// Status is the probe's HTTP status (0 when it did not answer).
	Status int `json:"status"`
	// Detail says why it is not up ("" when it is).
	Detail string `json:"detail,omitempty"`
}

// AlertCounts are Alertmanager's alerts now. Firing, Silenced and
// Inhibited are absent (null) unless State is ok: an Alertmanager that is
// not configured or does not answer is never a count of 0.
type AlertCounts struct {
	// State is ok, not_configured (no ALERTMANAGER_URL) or unavailable.
	State string `json:"state"`
	// Firing is the alerts no silence or inhibition holds (Alertmanager's
	// GET /api/v2/alerts?active=true&silenced=false&inhibited=false).
	Firing *int `json:"firing"`
	// Silenced and Inhibited are the alerts a silence, or an inhibition
	// rule (and no silence), holds.
	Silenced  *int `json:"silenced"`
	Inhibited *int `json:"inhibited"`
	// Alertnames are the names of the firing alerts, sorted, each once.
	Alertnames []string `json:"alertnames"`
	Detail     string   `json:"detail,omitempty"`
}

// HealthSummary answers GET /api/health.
type HealthSummary struct {
	GeneratedAt time.Time       `json:"generated_at"`
	Services    []ServiceHealth `json:"services"`
	Alerts      AlertCounts     `json:"alerts"`
}

type healthHandler struct {
	targets []healthTarget
	amURL   string
	client  *http.Client
	cache   *summaryCache
}

type healthTarget struct{ name, base, probe string }

func newHealthHandler(cfg Config) *healthHandler {
	return &healthHandler{
		targets: []healthTarget{
			{"classifier", strings.TrimRight(cfg.ClassifierURL, "/"), "/ready"},
			{"publisher", strings.TrimRight(cfg.PublisherURL, "/"), "/ready"},
			{"index-manager", strings.TrimRight(cfg.IndexManagerURL, "/"), "/ready"},
			{"prometheus", strings.TrimRight(cfg.PrometheusURL, "/"), "/-/ready"},
			{"alertmanager", strings.TrimRight(cfg.AlertmanagerURL, "/"), "/-/ready"},
		},
		amURL:  strings.TrimRight(cfg.AlertmanagerURL, "/"),
		client: &http.Client{Timeout: healthCallTimeout},
		cache:  newSummaryCache(healthCacheTTL, 1),
	}
}

// forget drops the cached answer, so the next request counts afresh (a
// silence was just set or expired).
func (h *healthHandler) forget() {
	h.cache.mu.Lock()
	defer h.cache.mu.Unlock()
	for k, e := range h.cache.entries {
		select {
		case <-e.ready:
			delete(h.cache.entries, k)
		default:
		}
	}
}

func (h *healthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > 0 {
		writeError(w, http.StatusBadRequest, "invalid_parameter", "GET /api/health takes no parameters")
		return
	}
	// Not per user: the probes carry no token, every user sees the same.
	body, err := h.cache.get(r.Context(), "health", false, func() []byte {
		b, _ := json.Marshal(h.build(context.WithoutCancel(r.Context())))
		return b
	})
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "canceled", "the request ended before the answer was ready")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}

func (h *healthHandler) build(ctx context.Context) HealthSummary {
	s := HealthSummary{GeneratedAt: time.Now().UTC(), Services: make([]ServiceHealth, len(h.targets))}
	fns := make([]func(context.Context), 0, len(h.targets)+1)
	for i, t := range h.targets {
		fns = append(fns, func(ctx context.Context) { s.Services[i] = h.probe(ctx, t) })
	}
	fns = append(fns, func(ctx context.Context) { s.Alerts = h.alerts(ctx) })
	pooled(ctx, fns)
	return s
}

// probe asks one service whether it is ready.
func (h *healthHandler) probe(ctx context.Context, t healthTarget) ServiceHealth {
	out := ServiceHealth{Name: t.name}
	if t.base == "" {
		out.State = "not_configured"
		out.Detail = map[string]string{"prometheus": "PROMETHEUS_URL is not set", "alertmanager": "ALERTMANAGER_URL is not set"}[t.name]
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, healthCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.base+t.probe, nil)
	if err != nil {
		out.State, out.Detail = "down", err.Error()
		return out
	}
	res, err := h.client.Do(req)
	if err != nil {
		out.State = "down"
		out.Detail = fmt.Sprintf("the %s did not answer", t.name)
		if ctx.Err() != nil || isTimeout(err) {
			out.Detail = fmt.Sprintf("the %s did not answer within %s", t.name, healthCallTimeout)
		}
		return out
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	out.Status = res.StatusCode
	if res.StatusCode == http.StatusOK {
		out.State = "up"
		return out
	}
	out.State = "not_ready"
	out.Detail = fmt.Sprintf("the %s answered %d to %s", t.name, res.StatusCode, t.probe)
	return out
}

// alerts counts Alertmanager's alerts by what holds them, in one call
// (every active, silenced, inhibited and unprocessed alert; resolved ones
// Alertmanager leaves out).
func (h *healthHandler) alerts(ctx context.Context) AlertCounts {
	if h.amURL == "" {
		return AlertCounts{State: "not_configured", Alertnames: []string{}, Detail: "ALERTMANAGER_URL is not set: firing alerts are not counted"}
	}
	unavailable := func(why string) AlertCounts {
		return AlertCounts{State: "unavailable", Alertnames: []string{}, Detail: why}
	}
	ctx, cancel := context.WithTimeout(ctx, healthCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.amURL+"/api/v2/alerts", nil)
	if err != nil {
		return unavailable(err.Error())
	}
	req.Header.Set("Accept", "application/json")
	res, err := h.client.Do(req)
	if err != nil {
		return unavailable("Alertmanager did not answer")
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return unavailable(fmt.Sprintf("Alertmanager answered %d", res.StatusCode))
	}
	var list []amAlert
	if err := json.NewDecoder(io.LimitReader(res.Body, healthAlertsMaxBytes)).Decode(&list); err != nil {
		return unavailable("Alertmanager's alerts could not be read")
	}
	return countAlerts(list)
}

// amAlert is the part of Alertmanager's API v2 alert the counts read.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		State       string   `json:"state"`
		SilencedBy  []string `json:"silencedBy"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

// countAlerts sorts alerts as Alertmanager's own filters do: silenced when
// a silence holds it, else inhibited when an inhibition does, else firing
// (active, or unprocessed: just received).
func countAlerts(list []amAlert) AlertCounts {
	var firing, silenced, inhibited int
	names := map[string]bool{}
	for _, a := range list {
		switch {
		case len(a.Status.SilencedBy) > 0:
			silenced++
		case len(a.Status.InhibitedBy) > 0:
			inhibited++
		default:
			firing++
			names[a.Labels["alertname"]] = true
		}
	}
	out := AlertCounts{State: "ok", Firing: &firing, Silenced: &silenced, Inhibited: &inhibited, Alertnames: make([]string, 0, len(names))}
	for n := range names {
		out.Alertnames = append(out.Alertnames, n)
	}
	slices.Sort(out.Alertnames)
	return out
}
