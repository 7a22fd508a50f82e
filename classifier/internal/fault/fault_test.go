package fault

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/esclient"
)

func TestPostgres(t *testing.T) {
	t.Parallel()
	pqErr := func(code string) error { return fmt.Errorf("write outbox: %w", &pq.Error{Code: pq.ErrorCode(code)}) }
	for _, tt := range []struct {
		name string
		err  error
		want Kind
	}{
		{"invalid byte sequence (a NUL)", pqErr("22021"), Document},
		{"value too long", pqErr("22001"), Document},
		{"not null violation", pqErr("23502"), Document},
		{"serialization failure", pqErr("40001"), Transient},
		{"deadlock", pqErr("40P01"), Transient},
		{"statement timeout", pqErr("57014"), Transient},
		{"admin shutdown", pqErr("57P01"), Dependency},
		{"cannot connect now", pqErr("57P03"), Dependency},
		{"too many connections", pqErr("53300"), Dependency},
		{"password authentication failed", pqErr("28P01"), Dependency},
		{"insufficient privilege", pqErr("42501"), Dependency},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, Dependency},
		{"bad connection", fmt.Errorf("exec: %w", driver.ErrBadConn), Dependency},
		{"whole statement timed out", context.DeadlineExceeded, Dependency},
		{"cancelled by stop", context.Canceled, Transient},
		{"argument the driver cannot encode", errors.New("sql: converting argument $3 type: unsupported type"), Document},
	} {
		if got := Postgres(tt.err); got != tt.want {
			t.Errorf("%s: Postgres() = %s, want %s", tt.name, got, tt.want)
		}
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
		want Kind
	}{
		{"unauthorized after a credentials change", re(401, ""), Dependency},
		{"forbidden", re(403, `{"type":"security_exception"}`), Dependency},
		{"overloaded", re(429, ""), Dependency},
		{"unavailable", re(503, ""), Dependency},
		{"request timeout", re(408, ""), Transient},
		{"malformed request", re(400, ""), Document},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, Dependency},
	} {
		if got := Elasticsearch(tt.err); got != tt.want {
			t.Errorf("%s: Elasticsearch() = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestElasticsearchItem(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status int
		body   string
		want   Kind
	}{
		{400, `{"type":"mapper_parsing_exception"}`, Document},
		{413, "", Document},
		{409, `{"type":"version_conflict_engine_exception"}`, Transient},
		{403, `{"type":"cluster_block_exception"}`, Transient},
		{429, `{"type":"es_rejected_execution_exception"}`, Dependency},
		{503, `{"type":"unavailable_shards_exception"}`, Dependency},
	} {
		if got := ElasticsearchItem(tt.status, tt.body); got != tt.want {
			t.Errorf("item %d %s = %s, want %s", tt.status, tt.body, got, tt.want)
		}
	}
}

func TestCode(t *testing.T) {
	t.Parallel()
	if c := Code(Document, true, nil); c != domain.ErrorCodeValidation {
		t.Errorf("document fault code = %s", c)
	}
	if c := Code(Transient, true, re408()); c != domain.ErrorCodeESTimeout {
		t.Errorf("ES timeout code = %s", c)
	}
	if c := Code(Transient, false, errors.New("x")); c != domain.ErrorCodeDB {
		t.Errorf("database code = %s", c)
	}
}

func re408() error { return &esclient.ResponseError{Status: 408} }
