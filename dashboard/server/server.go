// Package server serves the dashboard's built files (dist/) and proxies the
// three service APIs under one origin, so the browser never makes a
// cross-origin call: /api/classifier/*, /api/publisher/* and
// /api/index-manager/* go to the services with the prefix stripped, with
// X-Forwarded-For set to the browser's address (the index-manager's login
// limits count per client address). /api/prometheus/api/v1/{query,query_range,alerts}
// is its own bounded, authenticated Prometheus proxy (prometheus.go),
// /api/health the health strip's services and unsilenced firing alerts
// (health.go), /api/overview, /api/find and /api/sources/priorities answer the
// Overview, Find and the sources' priorities in one request each, by
// calls to the services on the browser's behalf (overview.go, lookups.go),
// /api/live a bounded, authenticated live tail of the publisher's Redis
// channels as server-sent events (live.go), /api/features the feature
// flags of DASHBOARD_FEATURES, which the proxy also enforces (features.go),
// and /api/openapi.json describes its own routes (openapi.yaml). Everything
// else is a file of dist/, or index.html for the single-page app's own
// routes.
package server

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/openapi"
	"github.com/north-cloud/infrastructure/redisclient"
	"github.com/redis/go-redis/v9"
)

// Defaults of Config.
const (
	// AddrDefault listens on loopback only: natively the dashboard is for
	// the operator's own browser. The image sets DASHBOARD_ADDR=0.0.0.0:3000
	// (compose publishes it on the host's loopback).
	AddrDefault          = "127.0.0.1:3000"
	DistDefault          = "dist"
	ClassifierURLDefault = "http://127.0.0.1:8071"
	PublisherURLDefault  = "http://127.0.0.1:8070"
	IndexManagerDefault  = "http://127.0.0.1:8090"
	// ProxyTimeoutDefault bounds how long a service may take to start
	// answering a proxied request.
	ProxyTimeoutDefault = 60 * time.Second
	// PrometheusMaxInFlightDefault caps the Prometheus queries proxied at
	// once, for every user together; more get 429.
	PrometheusMaxInFlightDefault = 4
	// PrometheusMaxInFlightPerUserDefault caps one user's Prometheus
	// queries in flight (the subject of the token, every tab and session of
	// it together) inside PrometheusMaxInFlight, so one user's panels
	// cannot take every slot; more get 429. The browser sends at most this
	// many at once (dashboard/src/api/prometheus.ts) and retries a 429.
	PrometheusMaxInFlightPerUserDefault = 2
	// PrometheusTimeoutDefault bounds one proxied Prometheus call.
	PrometheusTimeoutDefault = 20 * time.Second
)

// Config configures the server.
type Config struct {
	// Addr is the listen address. Defaults to AddrDefault.
	Addr string
	// Dist is the directory of `npm run build`'s output. Defaults to
	// DistDefault.
	Dist string
	// ClassifierURL, PublisherURL and IndexManagerURL are the services'
	// base URLs. Default to ClassifierURLDefault, PublisherURLDefault and
	// IndexManagerDefault.
	ClassifierURL   string
	PublisherURL    string
	IndexManagerURL string
	// ReadOnly hides destructive actions in the dashboard (served as
	// /config.json) and makes the proxy refuse, with 403, every method but
	// GET and HEAD to the three APIs whatever the token's role (sign-in
	// and the reads sent by POST pass). The services' own role policy
	// applies either way.
	ReadOnly bool
	// ProxyTimeout bounds the wait for a service's response headers.
	// Defaults to ProxyTimeoutDefault.
	ProxyTimeout time.Duration
	// PrometheusURL is the Prometheus the Overview's charts read
	// (query_range through /api/prometheus); empty: no charts history.
	PrometheusURL string
	// PrometheusMaxInFlight caps concurrent proxied Prometheus queries.
	// Defaults to PrometheusMaxInFlightDefault.
	PrometheusMaxInFlight int
	// PrometheusMaxInFlightPerUser caps one user's concurrent proxied
	// Prometheus queries, inside PrometheusMaxInFlight. Defaults to
	// PrometheusMaxInFlightPerUserDefault.
	PrometheusMaxInFlightPerUser int
	// PrometheusTimeout bounds one proxied Prometheus call. Defaults to
	// PrometheusTimeoutDefault.
	PrometheusTimeout time.Duration
	// AlertmanagerURL is the Alertmanager Prometheus sends its alerts to,
	// whose silences /api/alerts/silences lists, sets and expires (each set
	// and expiry recorded in the index-manager's audit log); empty: those
	// routes answer 503.
	AlertmanagerURL string
	// Auth verifies the bearer tokens of the dashboard server's own API
	// (the Prometheus proxy, the live tail, /api/openapi.json): the
	// services' tokens, the same JWT_SECRET. Required.
	Auth auth.Config
	// Features says which features are on (DASHBOARD_FEATURES); the zero
	// value has every one on.
	Features FeatureSet
	// RedisURL is the Redis the publisher publishes on (one server,
	// redis:// or rediss://), which the live tail subscribes to; empty:
	// GET /api/live answers 503.
	RedisURL string
	// LiveMaxStreams caps the live-tail streams open at once. Defaults to
	// LiveMaxStreamsDefault.
	LiveMaxStreams int
	// LiveChannels are the channel patterns the live tail subscribes to.
	// Defaults to LiveChannels() (a test names its own: Redis pub/sub is
	// shared by every database number, so parallel tests would see each
	// other's messages).
	LiveChannels []string
	// LiveBuffer is each stream's queue of messages for a reader that has
	// fallen behind. Defaults to LiveBufferDefault.
	LiveBuffer int
	// LiveMaxDuration ends a stream after this long. Defaults to
	// LiveMaxDurationDefault.
	LiveMaxDuration time.Duration
	// LiveHeartbeat is the interval of the stream's keep-alive comment.
	// Defaults to LiveHeartbeatDefault.
	LiveHeartbeat time.Duration
	// LiveWriteTimeout bounds one write to a stream. Defaults to
	// LiveWriteTimeoutDefault.
	LiveWriteTimeout time.Duration
	// LiveMinRole is the least role that may open the live tail. Defaults
	// to LiveMinRoleDefault.
	LiveMinRole auth.Role
	// TrustedProxies are the peers whose X-Forwarded-For names the browser
	// (a reverse proxy in front of the dashboard; DASHBOARD_TRUSTED_PROXIES).
	// The services get the browser's address in X-Forwarded-For: the
	// nearest untrusted address of the header when the peer is trusted,
	// else the peer itself, and never what the browser wrote. Nil trusts
	// no one.
	TrustedProxies []netip.Prefix
}

// ConfigFromEnv reads DASHBOARD_ADDR, DASHBOARD_DIST, CLASSIFIER_URL,
// PUBLISHER_URL, INDEX_MANAGER_URL, PROMETHEUS_URL, DASHBOARD_READ_ONLY,
// DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT, DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT_PER_USER,
// DASHBOARD_PROMETHEUS_TIMEOUT,
// DASHBOARD_FEATURES, DASHBOARD_REDIS_URL, DASHBOARD_LIVE_MAX_STREAMS,
// DASHBOARD_LIVE_BUFFER, DASHBOARD_LIVE_MAX_DURATION,
// DASHBOARD_LIVE_HEARTBEAT, DASHBOARD_LIVE_MIN_ROLE,
// DASHBOARD_TRUSTED_PROXIES, ALERTMANAGER_URL, JWT_SECRET and
// JWT_MAX_LIFETIME (the last two checked as the services check them).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	vars := map[string]string{}
	for _, name := range []string{"JWT_SECRET", "JWT_MAX_LIFETIME", "DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT", "DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT_PER_USER", "DASHBOARD_PROMETHEUS_TIMEOUT",
		"DASHBOARD_LIVE_MAX_STREAMS", "DASHBOARD_LIVE_BUFFER", "DASHBOARD_LIVE_MAX_DURATION", "DASHBOARD_LIVE_HEARTBEAT"} {
		vars[name] = getenv(name)
	}
	l := config.NewFromMap(vars)
	c := Config{
		Auth:                         auth.ConfigFromEnv(l),
		PrometheusMaxInFlight:        l.PositiveInt("DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT", PrometheusMaxInFlightDefault),
		PrometheusMaxInFlightPerUser: l.PositiveInt("DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT_PER_USER", PrometheusMaxInFlightPerUserDefault),
		PrometheusTimeout:            l.Duration("DASHBOARD_PROMETHEUS_TIMEOUT", PrometheusTimeoutDefault),
		Addr:                         getenv("DASHBOARD_ADDR"),
		Dist:                         getenv("DASHBOARD_DIST"),
		ClassifierURL:                getenv("CLASSIFIER_URL"),
		PublisherURL:                 getenv("PUBLISHER_URL"),
		IndexManagerURL:              getenv("INDEX_MANAGER_URL"),
		PrometheusURL:                strings.TrimRight(getenv("PROMETHEUS_URL"), "/"),
		AlertmanagerURL:              strings.TrimRight(getenv("ALERTMANAGER_URL"), "/"),
		RedisURL:                     strings.TrimSpace(getenv("DASHBOARD_REDIS_URL")),
		LiveMaxStreams:               l.PositiveInt("DASHBOARD_LIVE_MAX_STREAMS", LiveMaxStreamsDefault),
		LiveBuffer:                   l.PositiveInt("DASHBOARD_LIVE_BUFFER", LiveBufferDefault),
		LiveMaxDuration:              l.Duration("DASHBOARD_LIVE_MAX_DURATION", LiveMaxDurationDefault),
		LiveHeartbeat:                l.Duration("DASHBOARD_LIVE_HEARTBEAT", LiveHeartbeatDefault),
	}
	errs := []error{l.Err()}
	features, err := ParseFeatures(getenv("DASHBOARD_FEATURES"))
	c.Features = features
	errs = append(errs, err)
	if raw := strings.TrimSpace(getenv("DASHBOARD_LIVE_MIN_ROLE")); raw != "" {
		role, err := auth.ParseRole(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("DASHBOARD_LIVE_MIN_ROLE: %w", err))
		}
		c.LiveMinRole = role
	}
	if c.TrustedProxies, err = httpserver.ParseTrustedProxies(getenv("DASHBOARD_TRUSTED_PROXIES")); err != nil {
		errs = append(errs, fmt.Errorf("DASHBOARD_TRUSTED_PROXIES: %w", err))
	}
	switch strings.ToLower(strings.TrimSpace(getenv("DASHBOARD_READ_ONLY"))) {
	case "", "0", "false", "no", "off":
	case "1", "true", "yes", "on":
		c.ReadOnly = true
	default:
		errs = append(errs, fmt.Errorf("DASHBOARD_READ_ONLY: must be true or false (got %q)", getenv("DASHBOARD_READ_ONLY")))
	}
	c.setDefaults()
	return c, errors.Join(append(errs, c.validate())...)
}

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = AddrDefault
	}
	if c.Dist == "" {
		c.Dist = DistDefault
	}
	if c.ClassifierURL == "" {
		c.ClassifierURL = ClassifierURLDefault
	}
	if c.PublisherURL == "" {
		c.PublisherURL = PublisherURLDefault
	}
	if c.IndexManagerURL == "" {
		c.IndexManagerURL = IndexManagerDefault
	}
	if c.ProxyTimeout == 0 {
		c.ProxyTimeout = ProxyTimeoutDefault
	}
	if c.PrometheusMaxInFlight == 0 {
		c.PrometheusMaxInFlight = PrometheusMaxInFlightDefault
	}
	if c.PrometheusMaxInFlightPerUser == 0 {
		c.PrometheusMaxInFlightPerUser = PrometheusMaxInFlightPerUserDefault
	}
	if c.PrometheusTimeout == 0 {
		c.PrometheusTimeout = PrometheusTimeoutDefault
	}
	if c.LiveMaxStreams == 0 {
		c.LiveMaxStreams = LiveMaxStreamsDefault
	}
	if c.LiveBuffer == 0 {
		c.LiveBuffer = LiveBufferDefault
	}
	if c.LiveMaxDuration == 0 {
		c.LiveMaxDuration = LiveMaxDurationDefault
	}
	if c.LiveHeartbeat == 0 {
		c.LiveHeartbeat = LiveHeartbeatDefault
	}
	if c.LiveWriteTimeout == 0 {
		c.LiveWriteTimeout = LiveWriteTimeoutDefault
	}
	if c.LiveMinRole == "" {
		c.LiveMinRole = LiveMinRoleDefault
	}
}

func (c *Config) validate() error {
	var errs []error
	for name, raw := range map[string]string{"CLASSIFIER_URL": c.ClassifierURL, "PUBLISHER_URL": c.PublisherURL, "INDEX_MANAGER_URL": c.IndexManagerURL} {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: must be an http(s) URL (got %q)", name, raw))
		}
	}
	if c.PrometheusURL != "" {
		u, err := url.Parse(c.PrometheusURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("PROMETHEUS_URL: must be an http(s) URL (got %q)", c.PrometheusURL))
		}
	}
	if c.AlertmanagerURL != "" {
		u, err := url.Parse(c.AlertmanagerURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("ALERTMANAGER_URL: must be an http(s) URL (got %q)", c.AlertmanagerURL))
		}
	}
	if c.ProxyTimeout < 0 || c.PrometheusTimeout < 0 || c.PrometheusMaxInFlight < 0 || c.PrometheusMaxInFlightPerUser < 0 {
		errs = append(errs, errors.New("ProxyTimeout, PrometheusTimeout, PrometheusMaxInFlight and PrometheusMaxInFlightPerUser: must not be negative"))
	}
	if c.RedisURL != "" {
		if redisclient.IsCluster(c.RedisURL) {
			errs = append(errs, errors.New("DASHBOARD_REDIS_URL: a Redis Cluster is not supported (the publisher uses sharded pub/sub there); name one server, redis:// or rediss://"))
		} else if _, err := redis.ParseURL(c.RedisURL); err != nil {
			errs = append(errs, fmt.Errorf("DASHBOARD_REDIS_URL: %w", err))
		}
	}
	if c.LiveMaxStreams < 0 || c.LiveBuffer < 0 || c.LiveMaxDuration < 0 || c.LiveHeartbeat < 0 || c.LiveWriteTimeout < 0 {
		errs = append(errs, errors.New("LiveMaxStreams, LiveBuffer, LiveMaxDuration, LiveHeartbeat and LiveWriteTimeout: must not be negative"))
	}
	if !c.LiveMinRole.Valid() {
		errs = append(errs, fmt.Errorf("DASHBOARD_LIVE_MIN_ROLE: unknown role %q", c.LiveMinRole))
	}
	return errors.Join(errs...)
}

//go:embed openapi.yaml
var openapiYAML []byte

// Server is the dashboard's handler. Close ends its live-tail streams and
// their Redis subscription.
type Server struct {
	handler http.Handler
	live    *liveHub
}

// ServeHTTP serves the dashboard.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close ends every live-tail stream (with an "end" event) and the Redis
// subscription, and waits for its goroutine; call it before
// http.Server.Shutdown, which waits for open streams. Idempotent.
func (s *Server) Close() { s.live.Close() }

// New returns the dashboard's handler.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("dashboard server: %w", err)
	}
	authn, err := auth.New(cfg.Auth)
	if err != nil {
		return nil, fmt.Errorf("dashboard server: %w", err)
	}
	doc, err := openapi.Load(openapiYAML)
	if err != nil {
		return nil, fmt.Errorf("dashboard server: %w", err)
	}
	mux := http.NewServeMux()
	m := newMetrics()
	upstreams := []struct{ name, prefix, target string }{
		{"classifier", "/api/classifier", cfg.ClassifierURL},
		{"publisher", "/api/publisher", cfg.PublisherURL},
		{"index-manager", "/api/index-manager", cfg.IndexManagerURL},
	}
	for _, u := range upstreams {
		target, _ := url.Parse(u.target)
		var proxy http.Handler = newProxy(u.prefix, target, cfg.ProxyTimeout, cfg.TrustedProxies, logger)
		if u.name == "classifier" {
			mux.Handle("GET "+u.prefix+classifierMetricsPath, m.countProxy(u.name,
				requireToken(authn, overviewMetricsHandler(proxy))))
		}
		if cfg.ReadOnly {
			proxy = readOnly(u.prefix, proxy)
		}
		proxy = featureGate(u.prefix, cfg.Features, proxy)
		mux.Handle(u.prefix+"/", m.countProxy(u.name, apiGate(u.prefix, authn, proxy)))
	}
	// The server's own API: every method reaches these handlers, which
	// answer 401 without a valid token, then 405 for anything but GET.
	mux.Handle("/api/prometheus/api/v1/{endpoint}", m.countProxy("prometheus", requireToken(authn, getOnly(newPromProxy(cfg, logger)))))
	mux.Handle("/api/openapi.json", requireToken(authn, getOnly(doc)))
	// Alertmanager's silences (silences.go): read by any role, set and
	// expired by an operator or admin, each recorded in the audit log.
	health := newHealthHandler(cfg)
	silencer := newSilences(cfg, authn, m, logger)
	// A silence set or expired is counted at the strip's next refresh,
	// not after the health answer's few seconds in the cache.
	silencer.changed = health.forget
	sil := m.countProxy("alertmanager", silencer)
	mux.Handle("/api/alerts/silences", sil)
	mux.Handle("/api/alerts/silences/{id}", sil)
	// The health strip of every page (health.go): each service up or down
	// and the firing alerts no silence holds, one answer for every user.
	mux.Handle("/api/health", m.countProxy("health", requireToken(authn, getOnly(health))))
	// Fan-outs to the services on the browser's behalf (fanout.go): the
	// Overview in one request, Find in one, the sources' priorities in one.
	f := newFanout(cfg)
	// Counted as the proxies are, each under its own name as the upstream.
	mux.Handle("/api/overview", m.countProxy("overview", requireToken(authn, getOnly(newOverviewHandler(f, logger)))))
	mux.Handle("/api/find", m.countProxy("find", requireToken(authn, getOnly(&findHandler{f}))))
	mux.Handle("/api/sources/priorities", m.countProxy("priorities", requireToken(authn, getOnly(&prioritiesHandler{f}))))
	mux.Handle("/api/features", featuresHandler(cfg.Features))
	hub := newLiveHub(cfg, logger, m.liveDropped)
	m.watchStreams(hub.open)
	mux.Handle("/api/live", &liveHandler{
		hub: hub, authn: authn, features: cfg.Features, minRole: cfg.LiveMinRole,
		maxDuration: cfg.LiveMaxDuration, heartbeat: cfg.LiveHeartbeat, writeTimeout: cfg.LiveWriteTimeout,
		meURL:  joinPath(strings.TrimRight(cfg.IndexManagerURL, "/"), "/api/v1/auth/me"),
		client: &http.Client{Timeout: 5 * time.Second}, logger: logger.With("component", "live_tail"), metrics: m,
	})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no service is mounted at "+r.URL.Path)
	})
	// Prometheus's scrape, without a token as the services' /metrics
	// (compose keeps the port on the host's loopback).
	mux.Handle("GET /metrics", m.handler())
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat(filepath.Join(cfg.Dist, "index.html")); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failing": []string{"dist"}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, map[string]bool{"read_only": cfg.ReadOnly, "prometheus": cfg.PrometheusURL != ""})
	})
	mux.Handle("/", spa(cfg.Dist))
	prefixes := make([]string, 0, len(upstreams))
	for _, u := range upstreams {
		prefixes = append(prefixes, u.prefix)
	}
	return &Server{handler: securityHeaders(contentSecurityPolicy(cfg.Dist), canonicalGate(prefixes, apiGzip(mux))), live: hub}, nil
}

// apiGzip compresses the JSON answers under /api/ (gzipJSON), but for the
// live tail's event stream, which is flushed event by event.
func apiGzip(next http.Handler) http.Handler {
	gz := gzipJSON(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/api/live" {
			gz.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// newProxy forwards prefix/* to target/*, keeping the escaped path intact
// (index names and document ids may hold escaped characters), with the
// browser's address (Config.TrustedProxies) as X-Forwarded-For.
func newProxy(prefix string, target *url.URL, timeout time.Duration, trusted []netip.Prefix, logger *slog.Logger) http.Handler {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = timeout
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			p := strings.TrimPrefix(r.In.URL.Path, prefix)
			raw := strings.TrimPrefix(r.In.URL.EscapedPath(), prefix)
			r.SetURL(target)
			r.Out.URL.Path = joinPath(target.Path, p)
			r.Out.URL.RawPath = joinPath(target.EscapedPath(), raw)
			if r.Out.URL.RawPath == r.Out.URL.Path {
				r.Out.URL.RawPath = ""
			}
			r.SetXForwarded()
			if ip, ok := httpserver.ClientIP(r.In, trusted); ok {
				r.Out.Header.Set("X-Forwarded-For", ip.String())
			}
		},
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			logger.WarnContext(r.Context(), "upstream unavailable", "upstream", target.Host, "path", r.URL.Path, "error", err)
			writeError(w, http.StatusBadGateway, "upstream_unavailable",
				fmt.Sprintf("the service behind %s is unavailable", prefix))
		},
	}
}

func joinPath(base, p string) string {
	if p == "" {
		p = "/"
	}
	return strings.TrimSuffix(base, "/") + p
}

// spa serves files of dist, and index.html for any path that is not a file
// (the app's own routes, such as /indices). Hashed assets are cached for a
// year; index.html never, so a new build is picked up at once. Text files
// go brotli-compressed (once per file, kept) or gzip-compressed to a
// browser that accepts it (compress.go).
func spa(dist string) http.Handler {
	root := os.DirFS(dist)
	files := http.FileServerFS(root)
	br := newBrotliCache()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed")
			return
		}
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(root, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				}
				if compressible(name) {
					w.Header().Add("Vary", "Accept-Encoding")
					if r.Header.Get("Range") == "" && acceptsBrotli(r) {
						if data := br.get(root, name, st); data != nil {
							serveBrotli(w, r, name, data)
							return
						}
					}
					if acceptsGzip(r) && r.Header.Get("Range") == "" {
						serveGzip(w, r, root, name)
						return
					}
				}
				files.ServeHTTP(w, r)
				return
			}
			if strings.HasPrefix(name, "assets/") || path.Ext(name) != "" {
				http.NotFound(w, r)
				return
			}
		}
		index, err := fs.ReadFile(root, "index.html")
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "not_built", "the dashboard is not built: run `npm run build` in dashboard/")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(index)
		}
	})
}

// requireToken answers 401 (in the services' error shape, with
// WWW-Authenticate) to a request without a valid bearer token: the
// services' own tokens, checked by the services' own verifier.
// The handlers behind it read the token's subject with userOf.
func requireToken(a *auth.Authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, err := a.VerifyRequest(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required (log in to the dashboard)")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, claims.Subject)))
	})
}

// userKey is the context key of the verified token's subject.
type userKey struct{}

// userOf is the subject of the token requireToken verified ("" outside it).
func userOf(ctx context.Context) string {
	user, _ := ctx.Value(userKey{}).(string)
	return user
}

// getOnly answers 405 with Allow: GET to any other method, so nothing
// reaches Prometheus but reads.
func getOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed: this route is read-only (GET)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// securityHeaders sets the Content-Security-Policy (headers.go) and the
// other security headers on every answer: the app, the API, errors and the
// probes.
func securityHeaders(csp string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in the services' error shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message}})
}
