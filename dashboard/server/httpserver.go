package server

import (
	"net/http"
	"net/url"
	"time"

	"github.com/north-cloud/infrastructure/redisclient"
)

const (
	// ReadHeaderTimeoutDefault bounds reading a request's headers.
	ReadHeaderTimeoutDefault = 10 * time.Second
	// ReadTimeoutDefault bounds reading a whole request, body included
	// (the largest the browser sends is a rule set or a query).
	ReadTimeoutDefault = 30 * time.Second
	// WriteTimeoutDefault bounds writing a response. It is longer than the
	// proxies' upstream timeouts, so a slow upstream answers 502, not a cut
	// connection. The live tail (/api/live) streams for hours: it moves its
	// own write deadline before every event (ResponseController), so this
	// does not end it.
	WriteTimeoutDefault = 2 * time.Minute
	// IdleTimeoutDefault bounds a kept-alive connection between requests.
	IdleTimeoutDefault = 2 * time.Minute
)

// NewHTTPServer returns the http.Server for handler on addr, with the
// timeouts above, so a client that sends slowly or never closes an idle
// connection cannot hold a connection open.
func NewHTTPServer(addr string, handler http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           handler,
		ReadHeaderTimeout: ReadHeaderTimeoutDefault,
		ReadTimeout:       ReadTimeoutDefault,
		WriteTimeout:      WriteTimeoutDefault,
		IdleTimeout:       IdleTimeoutDefault,
	}
}

// LogAttrs is the effective configuration as slog key-value pairs, for the
// start-up line, with the password of every URL masked (PROMETHEUS_URL and
// the services' URLs may carry basic-auth credentials) and no secret.
func (c Config) LogAttrs() []any {
	return []any{
		"addr", c.Addr, "dist", c.Dist, "classifier", redactURL(c.ClassifierURL),
		"publisher", redactURL(c.PublisherURL), "index_manager", redactURL(c.IndexManagerURL), "read_only", c.ReadOnly,
		"prometheus", redactURL(c.PrometheusURL), "alertmanager", redactURL(c.AlertmanagerURL), "prometheus_max_in_flight", c.PrometheusMaxInFlight,
		"prometheus_timeout", c.PrometheusTimeout.String(), "auth", c.Auth.String(),
		"features", c.Features.String(), "redis", redisclient.Redact(c.RedisURL), "live_max_streams", c.LiveMaxStreams,
		"live_buffer", c.LiveBuffer, "live_max_duration", c.LiveMaxDuration.String(), "live_min_role", c.LiveMinRole,
	}
}

// redactURL masks the password of raw's userinfo; a URL that does not
// parse is left out whole, since it may hold anything.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
