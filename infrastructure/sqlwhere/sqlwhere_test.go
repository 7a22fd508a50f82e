package sqlwhere_test

import (
	"reflect"
	"testing"

	"github.com/north-cloud/infrastructure/sqlwhere"
)

// An empty builder selects everything: TRUE for a query that writes WHERE
// itself, nothing for one that takes Where.
func TestEmpty(t *testing.T) {
	t.Parallel()
	var b sqlwhere.Builder
	if got := b.Cond(); got != "TRUE" {
		t.Errorf("Cond() = %q, want TRUE", got)
	}
	if got := b.Where(); got != "" {
		t.Errorf("Where() = %q, want empty", got)
	}
	if len(b.Args()) != 0 {
		t.Errorf("Args() = %v, want none", b.Args())
	}
}

// Placeholders are numbered in the order their values are added, across
// conditions, conditions without values, several values in one condition
// and an argument added after the clause.
func TestNumbering(t *testing.T) {
	t.Parallel()
	var b sqlwhere.Builder
	b.Add("source_name = ?", "alpha")
	b.Add("permanent_at IS NULL")
	b.Add("(created_at, id) < (?, ?::uuid)", "t", "id")
	limit := b.Arg(10)
	wantCond := "source_name = $1 AND permanent_at IS NULL AND (created_at, id) < ($2, $3::uuid)"
	if got := b.Cond(); got != wantCond {
		t.Errorf("Cond() = %q, want %q", got, wantCond)
	}
	if got := b.Where(); got != " WHERE "+wantCond {
		t.Errorf("Where() = %q", got)
	}
	if limit != "$4" {
		t.Errorf("Arg() = %q, want $4", limit)
	}
	if got, want := b.Args(), []any{"alpha", "t", "id", 10}; !reflect.DeepEqual(got, want) {
		t.Errorf("Args() = %v, want %v", got, want)
	}
}

// A condition whose placeholders and values do not match is a bug in the
// caller, caught at once rather than sent to the database.
func TestMismatchPanics(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cond string
		args []any
	}{
		{"a = ?", nil},
		{"a = ?", []any{1, 2}},
		{"a = ? AND b = ?", []any{1}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Add(%q, %v) did not panic", tt.cond, tt.args)
				}
			}()
			var b sqlwhere.Builder
			b.Add(tt.cond, tt.args...)
		}()
	}
}
