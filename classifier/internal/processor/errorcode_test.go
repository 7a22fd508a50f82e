package processor

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/fault"
)

// The committer keeps the shared policy (infrastructure/fault, where the
// full table is tested): these are the cases it relies on.
func TestPostgresFaults(t *testing.T) {
	t.Parallel()
	pqErr := func(code string) error { return fmt.Errorf("write outbox: %w", &pq.Error{Code: pq.ErrorCode(code)}) }
	for _, tt := range []struct {
		name string
		err  error
		want fault.Kind
	}{
		{"row affected twice", pqErr("21000"), fault.Statement},
		{"invalid byte sequence (a NUL)", pqErr("22021"), fault.Statement},
		{"a trigger's exception", pqErr("P0001"), fault.Statement},
		{"serialization failure", pqErr("40001"), fault.Transient},
		{"too many connections", pqErr("53300"), fault.Dependency},
	} {
		if got := fault.Postgres(tt.err); got != tt.want {
			t.Errorf("%s: Postgres() = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestRowCode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		code string
		want domain.ErrorCode
	}{
		{"22021", domain.ErrorCodeValidation},
		{"23514", domain.ErrorCodeValidation},
		{"21000", domain.ErrorCodeDB},
		{"P0001", domain.ErrorCodeDB},
		{"XX000", domain.ErrorCodeDB},
	} {
		if got := rowCode(&pq.Error{Code: pq.ErrorCode(tt.code)}); got != tt.want {
			t.Errorf("rowCode(%s) = %s, want %s", tt.code, got, tt.want)
		}
	}
}

func TestFaultCode(t *testing.T) {
	t.Parallel()
	if c := faultCode(fault.Statement, true, nil); c != domain.ErrorCodeValidation {
		t.Errorf("document fault code = %s", c)
	}
	if c := faultCode(fault.Transient, true, &esclient.ResponseError{Status: 408}); c != domain.ErrorCodeESTimeout {
		t.Errorf("ES timeout code = %s", c)
	}
	if c := faultCode(fault.Dependency, true, &esclient.ResponseError{Status: 503}); c != domain.ErrorCodeESUnavailable {
		t.Errorf("ES unavailable code = %s", c)
	}
	if c := faultCode(fault.Transient, false, errors.New("x")); c != domain.ErrorCodeDB {
		t.Errorf("database code = %s", c)
	}
}
