package server

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Reasons a live-tail stream is refused
// (dashboard_live_streams_refused_total{reason}).
const (
	// refusedCap: DASHBOARD_LIVE_MAX_STREAMS streams are open (429).
	refusedCap = "cap"
	// refusedAuth: no valid bearer token (401).
	refusedAuth = "auth"
	// refusedRole: a role under DASHBOARD_LIVE_MIN_ROLE (403).
	refusedRole = "role"
	// refusedFeature: DASHBOARD_FEATURES turned live_tail off (403).
	refusedFeature = "feature"
	// refusedUnavailable: no Redis configured, Redis did not confirm the
	// subscription, or the server is stopping (503).
	refusedUnavailable = "unavailable"
)

// metrics are the dashboard server's own series, on a registry of their
// own (one per Server: nothing is registered globally), served at GET
// /metrics with the Go runtime's and the process's.
type metrics struct {
	registry *prometheus.Registry
	// liveRefused counts the live-tail streams refused, by reason.
	liveRefused *prometheus.CounterVec
	// liveSent counts the messages written to live-tail streams.
	liveSent prometheus.Counter
	// liveDropped counts the messages a stream's full buffer lost.
	liveDropped prometheus.Counter
	// proxyRequests counts the requests of the service proxies, the
	// Prometheus proxy and the one-request reads (overview, find,
	// priorities: their calls on the browser's behalf), by upstream and the
	// status answered.
	proxyRequests *prometheus.CounterVec
	// silenceAuditFailures counts silences set or expired whose audit
	// record the index-manager did not take.
	silenceAuditFailures prometheus.Counter
}

// newMetrics registers the series (dashboard_live_streams by
// watchStreams, once the live tail's hub exists).
func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		liveRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dashboard_live_streams_refused_total",
			Help: "Live-tail streams (GET /api/live) refused, by reason: cap, auth, role, feature, unavailable.",
		}, []string{"reason"}),
		liveSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dashboard_live_messages_sent_total",
			Help: "Messages written to live-tail streams (one per stream that received it).",
		}),
		liveDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dashboard_live_messages_dropped_total",
			Help: "Messages a live-tail stream lost because its buffer (DASHBOARD_LIVE_BUFFER) was full: its reader had fallen behind.",
		}),
		proxyRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dashboard_proxy_requests_total",
			Help: "Requests through the dashboard server's proxies, by upstream (classifier, publisher, index-manager, prometheus, alertmanager (the silences); overview, find and priorities for the one-request reads that call the services on the browser's behalf) and the status answered (the upstream's, or the proxy's own refusal).",
		}, []string{"upstream", "code"}),
		silenceAuditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dashboard_silence_audit_failures_total",
			Help: "Silences set or expired through the dashboard whose audit record the index-manager did not take (a silence just set is then expired again).",
		}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.liveRefused, m.liveSent, m.liveDropped, m.proxyRequests, m.silenceAuditFailures,
	)
	// Every reason from zero, so a rate over a first refusal is not lost.
	for _, r := range []string{refusedCap, refusedAuth, refusedRole, refusedFeature, refusedUnavailable} {
		m.liveRefused.WithLabelValues(r)
	}
	return m
}

// watchStreams registers dashboard_live_streams, read from open at each
// scrape.
func (m *metrics) watchStreams(open func() int) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dashboard_live_streams",
		Help: "Live-tail streams (GET /api/live) open now.",
	}, func() float64 { return float64(open()) }))
}

// handler serves the registry (GET /metrics).
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// countProxy counts each request of next by upstream and the status it
// answered.
func (m *metrics) countProxy(upstream string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		m.proxyRequests.WithLabelValues(upstream, strconv.Itoa(sw.status)).Inc()
	})
}

// statusWriter records the status written. Unwrap lets
// http.ResponseController (the reverse proxy's flushes) reach the
// connection's writer.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader && code >= 200 {
		s.status, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wroteHeader = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
