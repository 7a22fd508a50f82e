// Package httpserver runs a service's HTTP API on gin with the middleware and
// operational routes (/health, /ready, /metrics) every service needs, and a
// Start/Stop contract that drains in-flight requests on shutdown.
package httpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults applied to zero Config fields.
const (
	MaxBodyBytesDefault      int64 = 1 << 20
	ShutdownTimeoutDefault         = 20 * time.Second
	ReadHeaderTimeoutDefault       = 10 * time.Second
	ReadyTimeoutDefault            = 2 * time.Second
	// ReadTimeoutDefault bounds reading one whole request, body included,
	// so a client that trickles a body cannot hold a connection and a
	// handler forever.
	ReadTimeoutDefault = 30 * time.Second
	// WriteTimeoutDefault bounds one request from the end of its headers to
	// the end of the response: above every handler's own bounds (database
	// 5s, searches 10s), so only a stuck client or handler meets it.
	WriteTimeoutDefault = 60 * time.Second
	// IdleTimeoutDefault closes keep-alive connections nobody uses, so a
	// stopping server does not wait on them and clients cannot hoard
	// sockets.
	IdleTimeoutDefault = 120 * time.Second
)

// Config describes one service's HTTP server.
type Config struct {
	// Addr is the listen address, such as ":8071"; ":0" picks a free port.
	// Required.
	Addr string
	// ServiceName is reported by /health. Required.
	ServiceName string
	// MaxBodyBytes caps request bodies; larger ones get 413. Defaults to
	// 1 MiB (HTTP_MAX_BODY_BYTES).
	MaxBodyBytes int64
	// ShutdownTimeout bounds Stop even when its context has no deadline.
	// Defaults to 20s (HTTP_SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout limits how long a client may take to send headers,
	// against slow-loris connections. Defaults to 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request. Defaults to 30s.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from its headers to the end of its
	// response. Defaults to 60s.
	WriteTimeout time.Duration
	// IdleTimeout closes idle keep-alive connections. Defaults to 120s.
	IdleTimeout time.Duration
	// ReadyTimeout bounds each /ready check. Defaults to 2s.
	ReadyTimeout time.Duration
	// ReadyDetails reports whether the caller of /ready may read the error
	// text of failing checks (service.Runtime allows callers with a valid
	// bearer token). Others see only "ok", "failing" or "degraded" per
	// check: dependency errors carry host names, addresses and user names.
	// nil shows the text to nobody.
	ReadyDetails func(*http.Request) bool
	// Meter, when set, records <service>_http_requests_total and
	// <service>_http_request_duration_seconds per route.
	Meter metric.Meter
	// TracerProvider, when set, gives every request a server span named
	// after its route pattern, continuing the caller's traceparent.
	TracerProvider trace.TracerProvider
}

// ConfigFromEnv reads the listen address from addrVar (defaulting to
// defaultAddr), HTTP_MAX_BODY_BYTES and HTTP_SHUTDOWN_TIMEOUT, recording
// invalid values on l.
func ConfigFromEnv(l *config.Loader, service, addrVar, defaultAddr string) Config {
	addr := l.String(addrVar, defaultAddr)
	_, _, err := net.SplitHostPort(addr)
	l.Check(addrVar, err == nil, fmt.Sprintf("must be host:port or :port (got %q)", addr))
	return Config{
		Addr:              addr,
		ServiceName:       service,
		MaxBodyBytes:      l.PositiveInt64("HTTP_MAX_BODY_BYTES", MaxBodyBytesDefault),
		ShutdownTimeout:   l.Duration("HTTP_SHUTDOWN_TIMEOUT", ShutdownTimeoutDefault),
		ReadHeaderTimeout: ReadHeaderTimeoutDefault,
		ReadTimeout:       ReadTimeoutDefault,
		WriteTimeout:      WriteTimeoutDefault,
		IdleTimeout:       IdleTimeoutDefault,
		ReadyTimeout:      ReadyTimeoutDefault,
	}
}

func (c *Config) setDefaults() {
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, MaxBodyBytesDefault)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, ShutdownTimeoutDefault)
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, ReadHeaderTimeoutDefault)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, ReadTimeoutDefault)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, WriteTimeoutDefault)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, IdleTimeoutDefault)
	c.ReadyTimeout = cmp.Or(c.ReadyTimeout, ReadyTimeoutDefault)
}

func (c *Config) validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("Addr must be host:port or :port (got %q)", c.Addr))
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("ServiceName is required"))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("MaxBodyBytes must be positive"))
	}
	if c.ShutdownTimeout < 0 || c.ReadHeaderTimeout < 0 || c.ReadyTimeout < 0 ||
		c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 {
		errs = append(errs, errors.New("ShutdownTimeout, ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout and ReadyTimeout must be positive"))
	}
	return errors.Join(errs...)
}

// ReadyCheck is one dependency /ready probes, such as a database ping. Check
// must honour ctx, which expires after Config.ReadyTimeout.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
	// Advisory checks report in /ready's details (and in its "degraded"
	// list) without making the service unready: a part of the work is
	// impaired (one raw index skipped), the rest goes on.
	Advisory bool
}

// Server is a gin engine behind an http.Server with a Start/Stop lifecycle.
type Server struct {
	cfg    Config
	logger *slog.Logger
	engine *gin.Engine
	http   *http.Server

	base lifecycle.Base
	mu   sync.Mutex
	addr string
	// stopErr is the outcome of the stop, written by the drain goroutine
	// before the base's done channel closes and read after it.
	stopErr error
}

// New builds the server and its operational routes. metrics is served at
// /metrics (usually telemetry.Provider.Handler()); checks are run by /ready.
func New(cfg Config, logger *slog.Logger, metrics http.Handler, checks ...ReadyCheck) (*Server, error) {
	cfg.setDefaults()
	errs := []error{cfg.validate()}
	if logger == nil {
		errs = append(errs, errors.New("logger is required"))
	}
	if metrics == nil {
		errs = append(errs, errors.New("metrics handler is required"))
	}
	seen := make(map[string]bool, len(checks))
	for _, rc := range checks {
		if rc.Name == "" || rc.Check == nil || seen[rc.Name] {
			errs = append(errs, fmt.Errorf("ready check %q must have a unique name and a Check func", rc.Name))
		}
		seen[rc.Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new http server: %w", err)
	}
	logger = logger.With(slog.String("component", "http_server"))

	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	engine.ContextWithFallback = true // lets handlers pass *gin.Context as a context.Context
	// Trust no proxy: the client IP we log comes from the connection, not
	// from a header any client can forge.
	if err := engine.SetTrustedProxies(nil); err != nil {
		return nil, fmt.Errorf("new http server: %w", err)
	}
	// The request's span is outermost, so it covers every other
	// middleware and a panic's 500.
	if cfg.TracerProvider != nil {
		engine.Use(requestTracing(cfg.TracerProvider))
	}
	// Request metrics go first, outside recovery, so that a request whose
	// handler panicked is counted with the 500 recovery answers.
	if cfg.Meter != nil {
		mw, err := requestMetrics(cfg.Meter, cfg.ServiceName)
		if err != nil {
			return nil, fmt.Errorf("new http server: %w", err)
		}
		engine.Use(mw)
	}
	engine.Use(
		recovery(logger),
		requestID(),
		accessLog(logger),
		bodyLimit(cfg.MaxBodyBytes),
		checkText(),
	)
	// Routes are added after New and before the first request.
	engine.Use(shadowedMethod(engine.Routes))
	engine.NoRoute(func(c *gin.Context) { WriteError(c, http.StatusNotFound, CodeNotFound, "no such route") })
	// A known path with a method it does not serve is 405 with Allow, not
	// 404: the client learns the path is right and the method wrong.
	engine.HandleMethodNotAllowed = true
	engine.NoMethod(func(c *gin.Context) {
		if allow := allowedMethods(engine.Routes(), c.Request.URL.Path); allow != "" {
			c.Header("Allow", allow)
		}
		WriteError(c, http.StatusMethodNotAllowed, CodeMethodNotAllowed, c.Request.Method+" is not allowed on this route")
	})
	engine.GET("/health", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"status": "ok", "service": cfg.ServiceName})
	})
	engine.GET("/ready", readyHandler(cfg.ReadyTimeout, cfg.ReadyDetails, checks))
	engine.GET("/metrics", gin.WrapH(metrics))

	return &Server{
		cfg:    cfg,
		logger: logger,
		engine: engine,
		http: &http.Server{
			Handler:           engine,
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			ReadTimeout:       cfg.ReadTimeout,
			WriteTimeout:      cfg.WriteTimeout,
			IdleTimeout:       cfg.IdleTimeout,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
	}, nil
}

// allowedMethods lists the methods of the resource path names: those of the
// most specific route patterns matching it (most static segments), so that
// POST /dlq/requeue does not advertise the DELETE of /dlq/:id, whose
// pattern it also matches.
func allowedMethods(routes gin.RoutesInfo, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best, methods := -1, []string{}
	for _, r := range routes {
		score, ok := patternMatch(strings.Split(strings.Trim(r.Path, "/"), "/"), segs)
		switch {
		case !ok || score < best:
		case score > best:
			best, methods = score, []string{r.Method}
		default:
			methods = append(methods, r.Method)
		}
	}
	slices.Sort(methods)
	return strings.Join(slices.Compact(methods), ", ")
}

// shadowedMethod answers 405 (with Allow) a request that reached a route
// with a path parameter although a more specific route owns the path with
// other methods: DELETE /dlq/requeue is a method POST /dlq/requeue does
// not have, not a DELETE of the dead letter with id "requeue".
func shadowedMethod(routes func() gin.RoutesInfo) gin.HandlerFunc {
	var once sync.Once
	var infos gin.RoutesInfo
	return func(c *gin.Context) {
		matched := c.FullPath()
		if !strings.Contains(matched, "/:") {
			c.Next()
			return
		}
		once.Do(func() { infos = routes() })
		segs := strings.Split(strings.Trim(c.Request.URL.Path, "/"), "/")
		own, _ := patternMatch(strings.Split(strings.Trim(matched, "/"), "/"), segs)
		for _, r := range infos {
			if score, ok := patternMatch(strings.Split(strings.Trim(r.Path, "/"), "/"), segs); ok && score > own {
				c.Header("Allow", allowedMethods(infos, c.Request.URL.Path))
				WriteError(c, http.StatusMethodNotAllowed, CodeMethodNotAllowed, c.Request.Method+" is not allowed on this route")
				return
			}
		}
		c.Next()
	}
}

// patternMatch reports whether a route pattern's segments match a path's,
// and how many of them are static.
func patternMatch(pattern, segs []string) (int, bool) {
	static := 0
	for i, p := range pattern {
		if strings.HasPrefix(p, "*") {
			return static, true
		}
		if i >= len(segs) {
			return 0, false
		}
		if strings.HasPrefix(p, ":") {
			continue
		}
		if p != segs[i] {
			return 0, false
		}
		static++
	}
	return static, len(pattern) == len(segs)
}

// Router returns the gin engine so a service can add its routes. Add them
// before Start.
func (s *Server) Router() *gin.Engine {
	return s.engine
}

// Start listens on Config.Addr and serves in a goroutine owned by the Server
// until Stop. Listening happens before Start returns, so a bad or busy
// address fails here rather than in the background. ctx only bounds
// listening: requests are not cancelled when it ends, so that Stop can drain
// them. Start is idempotent; starting a stopped server is an error.
func (s *Server) Start(ctx context.Context) error {
	err := s.base.StartFunc(ctx, func(context.Context) error {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
		if err != nil {
			return err
		}
		addr := ln.Addr().String()
		s.mu.Lock()
		s.addr = addr
		s.mu.Unlock()
		s.base.Go(func() {
			if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				s.logger.Error("http server stopped serving", slog.String("addr", addr), slog.Any("error", err))
				s.mu.Lock()
				s.stopErr = errors.Join(s.stopErr, err)
				s.mu.Unlock()
			}
		})
		s.logger.Info("http server listening", slog.String("addr", addr))
		return nil
	})
	if err != nil {
		return fmt.Errorf("start http server: %w", err)
	}
	return nil
}

// Stop stops accepting connections and waits for in-flight requests to
// finish, bounded by ctx and Config.ShutdownTimeout; when that runs out the
// remaining connections are closed. Stop is idempotent and safe before
// Start; every call waits for the same drain and returns its result.
func (s *Server) Stop(ctx context.Context) error {
	done, stopping := s.base.StopInit()
	if stopping {
		drain := func() {
			ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
			defer cancel()
			if err := s.http.Shutdown(ctx); err != nil {
				err = errors.Join(err, s.http.Close())
				s.mu.Lock()
				s.stopErr = errors.Join(s.stopErr, err)
				s.mu.Unlock()
			}
		}
		// The drain runs as a goroutine of the server's own, so that a
		// concurrent Stop waits for it too.
		if !s.base.Go(drain) {
			drain()
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("stop http server: %w", ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopErr != nil {
		return fmt.Errorf("stop http server: %w", s.stopErr)
	}
	return nil
}

// Addr returns the address the server listens on after Start (with the real
// port when Config.Addr asked for ":0"), or "" before.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}
