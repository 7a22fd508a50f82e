package fault_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/lib/pq"

	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/fault"
)

func pqErr(code string) error {
	return fmt.Errorf("write outbox: %w", &pq.Error{Code: pq.ErrorCode(code)})
}

// The classification table: only an availability error is an outage; what
// one statement answered about its data is never one.
func TestPostgres(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want fault.Kind
	}{
		// Availability errors: the database is out.
		{"connection failure", pqErr("08006"), fault.Dependency},
		{"connection does not exist", pqErr("08003"), fault.Dependency},
		{"password authentication failed", pqErr("28P01"), fault.Dependency},
		{"too many connections", pqErr("53300"), fault.Dependency},
		{"disk full", pqErr("53100"), fault.Dependency},
		{"admin shutdown", pqErr("57P01"), fault.Dependency},
		{"cannot connect now", pqErr("57P03"), fault.Dependency},
		{"database does not exist", pqErr("3D000"), fault.Dependency},
		{"read-only standby", pqErr("25006"), fault.Dependency},
		{"insufficient privilege", pqErr("42501"), fault.Dependency},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, fault.Dependency},
		{"connection reset", fmt.Errorf("exec: %w", syscall.ECONNRESET), fault.Dependency},
		{"broken pipe", fmt.Errorf("exec: %w", syscall.EPIPE), fault.Dependency},
		{"bad connection", fmt.Errorf("exec: %w", driver.ErrBadConn), fault.Dependency},
		{"connection done", fmt.Errorf("exec: %w", sql.ErrConnDone), fault.Dependency},
		{"EOF", fmt.Errorf("exec: %w", io.EOF), fault.Dependency},
		{"unexpected EOF", io.ErrUnexpectedEOF, fault.Dependency},
		// Transient: the same statement may pass when tried again.
		{"serialization failure", pqErr("40001"), fault.Transient},
		{"deadlock", pqErr("40P01"), fault.Transient},
		{"statement timeout", pqErr("57014"), fault.Transient},
		{"cancelled by stop", context.Canceled, fault.Transient},
		// What one statement answered: never an outage.
		{"row affected twice (ON CONFLICT DO UPDATE)", pqErr("21000"), fault.Statement},
		{"invalid byte sequence (a NUL)", pqErr("22021"), fault.Statement},
		{"value too long", pqErr("22001"), fault.Statement},
		{"not null violation", pqErr("23502"), fault.Statement},
		{"check violation", pqErr("23514"), fault.Statement},
		{"undefined column", pqErr("42703"), fault.Statement},
		{"raise exception", pqErr("P0001"), fault.Statement},
		{"internal error", pqErr("XX000"), fault.Statement},
		{"program limit", pqErr("54000"), fault.Statement},
		{"argument the driver cannot encode", errors.New("sql: converting argument $3 type: unsupported type"), fault.Statement},
		// Cannot tell: prove it with a probe.
		{"our own deadline", fmt.Errorf("exec: %w", context.DeadlineExceeded), fault.Ambiguous},
		{"unexplained driver error", errors.New("pq: unexpected message"), fault.Ambiguous},
	} {
		if got := fault.Postgres(tt.err); got != tt.want {
			t.Errorf("%s: Postgres(%v) = %s, want %s", tt.name, tt.err, got, tt.want)
		}
		if got, want := fault.PostgresUnavailable(tt.err), tt.want == fault.Dependency; got != want {
			t.Errorf("%s: PostgresUnavailable = %v, want %v", tt.name, got, want)
		}
	}
	if fault.PostgresUnavailable(nil) {
		t.Error("PostgresUnavailable(nil) = true")
	}
}

func TestPostgresInvalid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{pqErr("22021"), true},
		{pqErr("23505"), true},
		{errors.New("sql: converting argument $1 type: unsupported type"), true},
		{pqErr("21000"), false},
		{pqErr("P0001"), false},
		{pqErr("XX000"), false},
		{nil, false},
	} {
		if got := fault.PostgresInvalid(tt.err); got != tt.want {
			t.Errorf("PostgresInvalid(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// An ambiguous error is the dependency's only when its probe fails too.
func TestProved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	up := func(context.Context) error { return nil }
	down := func(context.Context) error { return syscall.ECONNREFUSED }
	deadline := fmt.Errorf("insert: %w", context.DeadlineExceeded)
	probed := 0
	counting := func(context.Context) error { probed++; return nil }
	for _, tt := range []struct {
		name  string
		err   error
		probe fault.Probe
		want  fault.Kind
	}{
		{"deadline, database answers", deadline, up, fault.Statement},
		{"deadline, database silent", deadline, down, fault.Dependency},
		{"deadline, no probe", deadline, nil, fault.Dependency},
		{"row error is never probed", pqErr("21000"), counting, fault.Statement},
		{"availability error is never probed", pqErr("57P01"), counting, fault.Dependency},
		{"transient is never probed", pqErr("40P01"), counting, fault.Transient},
	} {
		if got := fault.PostgresProved(ctx, tt.err, tt.probe); got != tt.want {
			t.Errorf("%s: PostgresProved = %s, want %s", tt.name, got, tt.want)
		}
	}
	if probed != 0 {
		t.Errorf("a probe ran %d times for errors that tell by themselves", probed)
	}
	// The probe has a deadline of its own even when the caller's context
	// has none, and runs when the caller's context is already cancelled.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	bounded := func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("probe without a deadline")
		}
		return ctx.Err()
	}
	if got := fault.Proved(cancelled, fault.Ambiguous, bounded); got != fault.Statement {
		t.Errorf("bounded probe on a cancelled context: %s, want statement", got)
	}
}

func TestElasticsearch(t *testing.T) {
	t.Parallel()
	re := func(status int, body string) error {
		return &esclient.ResponseError{Op: "bulk", Status: status, Body: body}
	}
	for _, tt := range []struct {
		name string
		err  error
		want fault.Kind
	}{
		{"unauthorized after a credentials change", re(401, ""), fault.Dependency},
		{"forbidden", re(403, `{"type":"security_exception"}`), fault.Dependency},
		{"index block", re(403, `{"type":"cluster_block_exception"}`), fault.Statement},
		{"overloaded", re(429, ""), fault.Dependency},
		{"unavailable", re(503, ""), fault.Dependency},
		{"request timeout", re(408, ""), fault.Transient},
		{"malformed request", re(400, ""), fault.Statement},
		{"cancelled by stop", context.Canceled, fault.Transient},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, fault.Dependency},
		{"our own deadline", fmt.Errorf("bulk: %w", context.DeadlineExceeded), fault.Ambiguous},
	} {
		if got := fault.Elasticsearch(tt.err); got != tt.want {
			t.Errorf("%s: Elasticsearch() = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// A request that ran out of our own deadline is an outage only when the
// cluster also fails its probe; otherwise it was a slow request, retried
// with backoff, and never the document's fault.
func TestElasticsearchProved(t *testing.T) {
	t.Parallel()
	slow := fmt.Errorf("bulk: %w", context.DeadlineExceeded)
	answers := func(context.Context) error { return nil }
	silent := func(context.Context) error { return errors.New("elasticsearch ping: connection refused") }
	if got := fault.ElasticsearchProved(context.Background(), slow, answers); got != fault.Transient {
		t.Errorf("slow request, cluster answers: %s, want transient", got)
	}
	if got := fault.ElasticsearchProved(context.Background(), slow, silent); got != fault.Dependency {
		t.Errorf("slow request, cluster silent: %s, want dependency", got)
	}
	if got := fault.ElasticsearchProved(context.Background(), &esclient.ResponseError{Status: 400}, silent); got != fault.Statement {
		t.Errorf("a refused request is the request's whatever the probe says: %s", got)
	}
}

func TestElasticsearchItem(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status int
		body   string
		want   fault.Kind
	}{
		{400, `{"type":"mapper_parsing_exception"}`, fault.Statement},
		{413, "", fault.Statement},
		{409, `{"type":"version_conflict_engine_exception"}`, fault.Transient},
		{408, "", fault.Transient},
		{403, `{"type":"cluster_block_exception"}`, fault.Transient},
		{429, `{"type":"es_rejected_execution_exception"}`, fault.Dependency},
		{503, `{"type":"unavailable_shards_exception"}`, fault.Dependency},
	} {
		if got := fault.ElasticsearchItem(tt.status, tt.body); got != tt.want {
			t.Errorf("item %d %s = %s, want %s", tt.status, tt.body, got, tt.want)
		}
	}
}

func TestIsTimeout(t *testing.T) {
	t.Parallel()
	if !fault.IsTimeout(&esclient.ResponseError{Status: 504}) || !fault.IsTimeout(context.DeadlineExceeded) {
		t.Error("a 504 and a deadline are timeouts")
	}
	if fault.IsTimeout(&esclient.ResponseError{Status: 503}) {
		t.Error("a 503 is not a timeout")
	}
}
