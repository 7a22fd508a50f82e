package audit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Recorder writes a finished entry (Store).
type Recorder interface {
	Record(ctx context.Context, e Entry) error
}

// writeTimeout bounds one audit write after the handler.
const writeTimeout = 5 * time.Second

// Context keys a handler sets through SetSummary and MarkRecorded.
const (
	summaryKey  = "github.com/north-cloud/infrastructure/audit.summary"
	recordedKey = "github.com/north-cloud/infrastructure/audit.recorded"
)

// SetSummary gives the entry of this request a short description of what
// the handler did ("requeued 12 dead letters"), in place of the start of
// the request body.
func SetSummary(c *gin.Context, summary string) { c.Set(summaryKey, summary) }

// MarkRecorded tells Middleware that the handler wrote this request's
// entry itself (Store.Begin and Finish), so it is not written twice.
func MarkRecorded(c *gin.Context) { c.Set(recordedKey, true) }

// Config is what Middleware needs.
type Config struct {
	// Recorder stores the entries. Required.
	Recorder Recorder
	// Policy tells which routes change something: every route whose
	// minimum role is above viewer is audited. It is the policy given to
	// the authenticator's middleware.
	Policy auth.Policy
	// Meter makes the <MetricPrefix>_audit_write_failures_total counter.
	// Defaults to a no-op meter.
	Meter metric.Meter
	// MetricPrefix is the service's metric prefix ("classifier").
	// Required.
	MetricPrefix string
	// Logger is required.
	Logger *slog.Logger
}

// Middleware records every request to a mutating route (a route whose
// minimum role under cfg.Policy is above viewer) after its handler: who
// (subject and role of the token), what (method, route, path parameters
// and query, the handler's summary or the start of the body), the
// outcome (status) and when. It goes in front of the authenticator's
// middleware so that refusals for the role (403) are recorded as denied;
// requests without a valid token (401) are not recorded, so no one can
// fill the log without a token. A failed write does not fail the
// request: it is logged and counted.
func Middleware(cfg Config) (gin.HandlerFunc, error) {
	if cfg.Recorder == nil || cfg.MetricPrefix == "" || cfg.Logger == nil {
		return nil, errors.New("audit middleware: Recorder, MetricPrefix and Logger are required")
	}
	if cfg.Meter == nil {
		cfg.Meter = noop.NewMeterProvider().Meter("audit")
	}
	failures, err := cfg.Meter.Int64Counter(cfg.MetricPrefix+"_audit_write_failures_total",
		metric.WithDescription("Audit log entries that could not be written (the request itself went on)."))
	if err != nil {
		return nil, errors.Join(errors.New("audit middleware: counter"), err)
	}
	log := cfg.Logger.With(slog.String("component", "audit"))
	return func(c *gin.Context) {
		if cfg.Policy.Required(c.Request.Method, c.FullPath()) == auth.RoleViewer {
			c.Next()
			return
		}
		body := &capture{ReadCloser: c.Request.Body}
		if c.Request.Body != nil {
			c.Request.Body = body
		}
		c.Next()
		subject := auth.Subject(c)
		if subject == "" || c.GetBool(recordedKey) {
			return
		}
		status := c.Writer.Status()
		summary := c.GetString(summaryKey)
		if _, ok := c.Get(summaryKey); !ok {
			summary = body.buf.String()
		}
		e := Entry{Actor: subject, Role: string(auth.RoleOf(c)), Method: c.Request.Method, Route: c.FullPath(),
			Parameters: parameters(c), Summary: summary, Outcome: OutcomeOf(status), StatusCode: &status,
			RequestID: httpserver.RequestID(c)}
		// The request has happened: record it even if the client went away.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), writeTimeout)
		defer cancel()
		if err := cfg.Recorder.Record(ctx, e); err != nil {
			failures.Add(ctx, 1)
			log.ErrorContext(ctx, "audit entry not written", slog.String("method", e.Method), slog.String("route", e.Route),
				slog.String("actor", SafeActor(subject)), slog.Int("status", status), slog.Any("error", err))
		}
	}, nil
}

// parameters are the request's path parameters and query values.
func parameters(c *gin.Context) map[string]any {
	out := map[string]any{}
	for _, p := range c.Params {
		out[p.Key] = p.Value
	}
	if q := c.Request.URL.Query(); len(q) > 0 {
		query := map[string]any{}
		for k, v := range q {
			if len(v) == 1 {
				query[k] = v[0]
			} else {
				query[k] = v
			}
		}
		out["query"] = query
	}
	return out
}

// capture keeps the first MaxSummaryBytes of what the handler reads of
// the body.
type capture struct {
	io.ReadCloser
	buf bytes.Buffer
}

func (r *capture) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if room := MaxSummaryBytes - r.buf.Len(); room > 0 && n > 0 {
		r.buf.Write(p[:min(n, room)])
	}
	return n, err
}
