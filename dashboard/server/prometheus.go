package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Bounds of the Prometheus proxy: the charts ask for a few series over at
// most a week, so anything heavier is refused before Prometheus sees it.
const (
	promQueryMaxBytes = 2048
	// promUpstreamTimeout is the evaluation timeout sent to Prometheus;
	// the proxy's own deadline (Config.PrometheusTimeout) is longer, so
	// Prometheus normally answers with its own timeout error first.
	promUpstreamTimeout = "15s"
	promBodyMaxBytes    = 32 << 20
)

// promProxy answers GET /api/prometheus/api/v1/query_range, /query and
// /alerts from Prometheus (behind requireToken and getOnly in New), with
// only query, start, end, step and time passed on (nothing to /alerts, the
// alerts Prometheus's rules hold), the query checked against promPolicy, at
// most Config.PrometheusMaxInFlight calls at a time in all and
// Config.PrometheusMaxInFlightPerUser of one user (the subject of the token
// requireToken verified), each bounded by timeout: the Overview's charts
// read the history Prometheus already keeps, so they survive a reload and
// match Grafana, and nothing else of Prometheus is reachable through the
// dashboard.
type promProxy struct {
	base    string
	policy  promPolicy
	slots   *fairSlots
	timeout time.Duration
	client  *http.Client
	logger  *slog.Logger
}

func newPromProxy(cfg Config, logger *slog.Logger) *promProxy {
	return &promProxy{
		base:    cfg.PrometheusURL,
		policy:  newPromPolicy(),
		slots:   newFairSlots(cfg.PrometheusMaxInFlight, cfg.PrometheusMaxInFlightPerUser),
		timeout: cfg.PrometheusTimeout,
		client:  &http.Client{Timeout: cfg.PrometheusTimeout},
		logger:  logger,
	}
}

// fairSlots caps the calls in flight in all (total) and per user (perUser),
// so one user's panels, however many, leave slots for the others: with the
// defaults (4 and 2) two users always get two queries each. Neither cap
// waits: a call over either is refused at once, and the browser retries.
type fairSlots struct {
	total, perUser int
	mu             sync.Mutex
	inFlight       int
	byUser         map[string]int
}

func newFairSlots(total, perUser int) *fairSlots {
	return &fairSlots{total: total, perUser: perUser, byUser: map[string]int{}}
}

// acquire takes a slot for user and returns the function that gives it
// back, or nil and the reason in words when user is at its own cap or every
// slot is taken.
func (s *fairSlots) acquire(user string) (release func(), refusal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byUser[user] >= s.perUser:
		return nil, fmt.Sprintf("you have %d Prometheus queries running, the most one user may (DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT_PER_USER); try again shortly", s.byUser[user])
	case s.inFlight >= s.total:
		return nil, fmt.Sprintf("at most %d Prometheus queries run at a time (DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT); try again shortly", s.total)
	}
	s.inFlight++
	s.byUser[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.inFlight--
			if s.byUser[user]--; s.byUser[user] <= 0 {
				delete(s.byUser, user)
			}
		})
	}, ""
}

func (p *promProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.base == "" {
		writeError(w, http.StatusServiceUnavailable, "prometheus_not_configured", "PROMETHEUS_URL is not set: the dashboard has no metrics history")
		return
	}
	endpoint := r.PathValue("endpoint")
	out, status, code, msg := url.Values{}, 0, "", ""
	if endpoint != "alerts" {
		out, status, code, msg = p.params(endpoint, r.URL.Query())
	}
	if status != 0 {
		writeError(w, status, code, msg)
		return
	}
	release, refusal := p.slots.acquire(userOf(r.Context()))
	if release == nil {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "too_many_requests", refusal)
		return
	}
	defer release()
	p.forward(w, r, endpoint, out)
}

// params checks the request's parameters and returns those Prometheus
// gets, or the status, code and message of the refusal.
func (p *promProxy) params(endpoint string, q url.Values) (out url.Values, status int, code, msg string) {
	out = url.Values{}
	query := q.Get("query")
	if query == "" || len(query) > promQueryMaxBytes {
		return nil, http.StatusBadRequest, "invalid_query", fmt.Sprintf("query is required, at most %d bytes", promQueryMaxBytes)
	}
	if err := p.policy.check(query); err != nil {
		return nil, http.StatusBadRequest, "query_not_allowed", err.Error()
	}
	out.Set("query", query)
	switch endpoint {
	case "query_range":
		start, err1 := promTime(q.Get("start"))
		end, err2 := promTime(q.Get("end"))
		step, err3 := strconv.ParseFloat(q.Get("step"), 64)
		switch {
		case err1 != nil || err2 != nil || !end.After(start):
			return nil, http.StatusBadRequest, "invalid_range", "start and end must be Unix times or RFC 3339, end after start"
		case end.Sub(start) > promRangeMax:
			return nil, http.StatusBadRequest, "invalid_range", "the range is at most " + promRangeMaxText
		case err3 != nil || math.IsNaN(step) || step <= 0 || math.IsInf(step, 0):
			return nil, http.StatusBadRequest, "invalid_step", "step must be a positive number of seconds"
		case end.Sub(start).Seconds()/step > promPointsMax:
			return nil, http.StatusBadRequest, "invalid_step", fmt.Sprintf("(end - start) / step may be at most %d steps (1h at a step of 60 s is 60); this range has %.0f",
				promPointsMax, end.Sub(start).Seconds()/step)
		}
		out.Set("start", q.Get("start"))
		out.Set("end", q.Get("end"))
		out.Set("step", q.Get("step"))
	case "query":
		if t := q.Get("time"); t != "" {
			if _, err := promTime(t); err != nil {
				return nil, http.StatusBadRequest, "invalid_time", "time must be a Unix time or RFC 3339"
			}
			out.Set("time", t)
		}
	default:
		return nil, http.StatusNotFound, "not_found", "only query, query_range and alerts are proxied to Prometheus"
	}
	out.Set("timeout", promUpstreamTimeout)
	return out, 0, "", ""
}

func (p *promProxy) forward(w http.ResponseWriter, r *http.Request, endpoint string, params url.Values) {
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/api/v1/"+endpoint+"?"+params.Encode(), nil)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "could not build the Prometheus request")
		return
	}
	res, err := p.client.Do(req)
	if err != nil {
		p.logger.WarnContext(r.Context(), "prometheus unavailable", "endpoint", endpoint, "error", err)
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			writeError(w, http.StatusGatewayTimeout, "upstream_timeout", fmt.Sprintf("Prometheus did not answer within %s", p.timeout))
			return
		}
		writeError(w, http.StatusBadGateway, "upstream_unavailable", "Prometheus did not answer")
		return
	}
	defer res.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(res.Body, promBodyMaxBytes))
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

func promTime(s string) (time.Time, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
