// Package esclient builds the Elasticsearch client every service uses and
// waits, with backoff, for the cluster to answer before a service starts.
package esclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/infrastructure/config"
)

const (
	// URLDefault is the local single-node cluster started by scripts/services.sh.
	URLDefault = "http://127.0.0.1:9200"
	// ConnectTimeoutDefault bounds how long New keeps retrying.
	ConnectTimeoutDefault = 60 * time.Second
)

// Config describes the cluster to talk to.
type Config struct {
	// URL of one node, or of several separated by commas: the client
	// spreads requests over them and, when one stops answering, retries on
	// the next and sets the dead one aside until it answers again, so a
	// cluster keeps serving through the loss of a node. Defaults to
	// URLDefault.
	URL string
	// ConnectTimeout bounds start-up retries. Defaults to ConnectTimeoutDefault.
	ConnectTimeout time.Duration
	// MaxIdleConnsPerHost sizes the HTTP keep-alive pool. Defaults to 64, so
	// concurrent workers do not open a connection per request.
	MaxIdleConnsPerHost int
	// TracerProvider, when set, gives every request a client span named
	// after its endpoint ("search", "indices.create"), a child of the span
	// in the request's context (the client's OpenTelemetry
	// instrumentation). Request bodies are not recorded.
	TracerProvider trace.TracerProvider
	// MaxRetries is how often a request is tried again on another node
	// after a network error or a 502, 503 or 504. Defaults to 2.
	MaxRetries int
	// Transport, when set, replaces the HTTP transport (tests wrap it to
	// count, hold or fail requests); MaxIdleConnsPerHost then does not
	// apply.
	Transport http.RoundTripper
}

// Client talks to Elasticsearch: go-elasticsearch's request API (esapi:
// client.Search, client.Indices.Create, ...) over its transport, which
// spreads requests over the nodes, retries them and carries the
// OpenTelemetry instrumentation. It is go-elasticsearch's own Client
// without the typed API, which nothing here uses and which is about 860
// packages: every build of every service, test and fuzz target compiled
// it, a minute of each first build on a new machine.
type Client struct {
	*esapi.API
	transport *elastictransport.Client
}

// Perform sends a request built by hand, for an endpoint esapi has no
// function for, through the same nodes, retries and instrumentation.
func (c *Client) Perform(req *http.Request) (*http.Response, error) {
	return c.transport.Perform(req)
}

// InstrumentationEnabled returns the client's OpenTelemetry
// instrumentation, nil without a TracerProvider: requests sent with
// esapi's request structs (req.Do) start their spans with it.
func (c *Client) InstrumentationEnabled() elastictransport.Instrumentation {
	return c.transport.InstrumentationEnabled()
}

// ConfigFromEnv reads ELASTICSEARCH_URL (one URL, or several separated by
// commas) and CONNECT_TIMEOUT.
func ConfigFromEnv(l *config.Loader) Config {
	const name = "ELASTICSEARCH_URL"
	raw := l.String(name, URLDefault)
	for _, one := range Addresses(raw) {
		u, err := url.Parse(one)
		ok := err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
		l.Check(name, ok, fmt.Sprintf("must be a URL with scheme http or https and a host, or several separated by commas (got %q)", Redact(one)))
		if !ok {
			raw = URLDefault
			break
		}
	}
	return Config{
		URL:            raw,
		ConnectTimeout: l.Duration("CONNECT_TIMEOUT", ConnectTimeoutDefault),
	}
}

// Addresses splits a URL setting into the node URLs it names (commas
// separate them; blanks around them are ignored).
func Addresses(raw string) []string {
	var out []string
	for _, a := range strings.Split(raw, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Redact returns an Elasticsearch URL (or a comma-separated list of them)
// for logs and errors: the password of https://user:pw@host masked (and an
// api_key query parameter, if any).
func Redact(raw string) string {
	if strings.Contains(raw, ",") {
		parts := Addresses(raw)
		for i, p := range parts {
			parts[i] = Redact(p)
		}
		return strings.Join(parts, ",")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable elasticsearch url>"
	}
	if q := u.Query(); q.Has("api_key") {
		q.Set("api_key", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// New returns a client after the cluster has answered a ping, retrying with
// backoff for up to ConnectTimeout.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*Client, error) {
	client, err := NewLazy(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = ConnectTimeoutDefault
	}
	err = backoff.Retry(ctx, backoff.Policy{Initial: 250 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}, cfg.ConnectTimeout,
		Ping(client),
		func(attempt int, err error, wait time.Duration) {
			logger.WarnContext(ctx, "elasticsearch not reachable yet", "url", Redact(cfg.URL), "attempt", attempt, "retry_in", wait.String(), "error", err)
		})
	if err != nil {
		return nil, fmt.Errorf("connect elasticsearch %s: %w", Redact(cfg.URL), err)
	}
	return client, nil
}

// NewLazy returns a client without contacting the cluster.
func NewLazy(cfg Config) (*Client, error) {
	if cfg.URL == "" {
		cfg.URL = URLDefault
	}
	if cfg.MaxIdleConnsPerHost <= 0 {
		cfg.MaxIdleConnsPerHost = 64
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = 2
	}
	var urls []*url.URL
	for _, a := range Addresses(cfg.URL) {
		u, err := url.Parse(strings.TrimRight(a, "/"))
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("new elasticsearch client: %q is not a URL with scheme http or https and a host", Redact(a))
		}
		urls = append(urls, u)
	}
	rt := cfg.Transport
	if rt == nil {
		rt = &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          cfg.MaxIdleConnsPerHost,
			MaxIdleConnsPerHost:   cfg.MaxIdleConnsPerHost,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		}
	}
	tc := elastictransport.Config{
		URLs:          urls,
		Transport:     rt,
		MaxRetries:    cfg.MaxRetries,
		RetryOnStatus: []int{502, 503, 504},
	}
	// https://user:password@host: the first URL's user authenticates every
	// request (the transport strips it from the URLs it sends to).
	if u := urls[0].User; u != nil {
		tc.Username = u.Username()
		tc.Password, _ = u.Password()
	}
	if cfg.TracerProvider != nil {
		tc.Instrumentation = elastictransport.NewOtelInstrumentation(cfg.TracerProvider, false, clientVersion())
	}
	transport, err := elastictransport.New(tc)
	if err != nil {
		return nil, fmt.Errorf("new elasticsearch client: %w", err)
	}
	return &Client{API: esapi.New(transport), transport: transport}, nil
}

// clientVersion is go-elasticsearch's version in this binary, for the
// spans' instrumentation scope ("" in a binary without build information).
func clientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/elastic/go-elasticsearch/v8" {
				return strings.TrimPrefix(m.Version, "v")
			}
		}
	}
	return ""
}

// Ping returns a check that succeeds when the cluster reports its health
// (any status: a yellow or red cluster still answers, and the index-level
// errors say more than a failed readiness check would); it is the /ready
// check for Elasticsearch. The minimal distribution has no GET / handler.
func Ping(client *Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		res, err := client.Cluster.Health(client.Cluster.Health.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("elasticsearch ping: %w", err)
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		if res.IsError() {
			return fmt.Errorf("elasticsearch ping: %s", res.Status())
		}
		return nil
	}
}

// ResponseError describes a non-2xx answer, keeping the status so callers
// can tell a missing index (404) from an outage (5xx).
type ResponseError struct {
	Op     string
	Status int
	Body   string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("%s: elasticsearch answered %d: %s", e.Op, e.Status, e.Body)
}

// CheckResponse turns a failed call or a non-2xx response into an error that
// names op, and drains and closes the body on error. On success it leaves the
// body for the caller to read and close.
func CheckResponse(op string, res *esapi.Response, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if res.IsError() {
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return &ResponseError{Op: op, Status: res.StatusCode, Body: string(b)}
	}
	return nil
}

// IsNotFound reports whether err is an Elasticsearch 404.
func IsNotFound(err error) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Status == http.StatusNotFound
}

// IsConflict reports whether err is an Elasticsearch 409 (a version conflict).
func IsConflict(err error) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Status == http.StatusConflict
}
