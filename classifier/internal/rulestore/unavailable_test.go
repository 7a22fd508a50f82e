package rulestore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/rulestore"
)

// The rules API answers 503 for what the shared fault policy calls an
// outage (one policy for every service), and for a request that ran out of
// time; a statement's own refusal is not an outage.
func TestIsUnavailableFollowsTheSharedPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pq.Error{Code: "53300"}, true},  // too many connections
		{&pq.Error{Code: "57P03"}, true},  // cannot connect now
		{&pq.Error{Code: "25006"}, true},  // read-only: a standby
		{&pq.Error{Code: "28P01"}, true},  // password refused
		{&pq.Error{Code: "23505"}, false}, // a duplicate: the statement's
		{&pq.Error{Code: "P0001"}, false}, // a trigger's exception
		{fmt.Errorf("list rules: %w", context.DeadlineExceeded), true},
		{rulestore.ErrUnavailable, true},
		{nil, false},
	} {
		if got := rulestore.IsUnavailable(tc.err); got != tc.want {
			t.Errorf("IsUnavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
