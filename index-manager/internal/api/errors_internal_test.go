package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/north-cloud/index-manager/internal/indices"
)

// TestStatusOf pins the one error-to-status mapping, including the
// Elasticsearch server errors (502) that a healthy test cluster does not
// produce on demand.
func TestStatusOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want int
		code string
	}{
		{&indices.Error{Op: "x", Kind: indices.ErrUpstream, Status: 500, Reason: "boom"}, http.StatusBadGateway, codeESError},
		{fmt.Errorf("wrapped: %w", &indices.Error{Op: "x", Kind: indices.ErrUpstream, Status: 503}), http.StatusBadGateway, codeESError},
		{&indices.Error{Op: "x", Kind: indices.ErrUnavailable, Err: errors.New("dial tcp: refused")}, http.StatusServiceUnavailable, codeESUnavailable},
		{&indices.Error{Op: "x", Kind: indices.ErrBusy, Status: 429, Reason: "rejected execution"}, http.StatusTooManyRequests, codeESBusy},
		{&indices.Error{Op: "x", Kind: indices.ErrTooLarge, Reason: "the answer is larger than 10 bytes"}, http.StatusBadRequest, codeTooLargeResult},
		{&indices.Error{Op: "x", Kind: indices.ErrNotFound}, http.StatusNotFound, codeNotFound},
		{&indices.Error{Op: "x", Kind: indices.ErrExists}, http.StatusConflict, codeExists},
		{&indices.Error{Op: "x", Kind: indices.ErrConflict}, http.StatusConflict, codeConflict},
		{&indices.Error{Op: "x", Kind: indices.ErrBadRequest, Reason: "bad"}, http.StatusBadRequest, codeESBad},
		{invalid("nope"), http.StatusBadRequest, codeInvalid},
		{fmt.Errorf("%w: bad signature", errCursor), http.StatusBadRequest, codeCursor},
		{fmt.Errorf("%w: x", errDatabase), http.StatusServiceUnavailable, codeDBUnavailable},
		{context.DeadlineExceeded, http.StatusServiceUnavailable, codeESUnavailable},
		{errors.New("secret internals"), http.StatusInternalServerError, codeInternal},
	}
	for _, tc := range cases {
		status, code, msg := statusOf(tc.err)
		if status != tc.want || code != tc.code {
			t.Errorf("%v: %d %s, want %d %s", tc.err, status, code, tc.want, tc.code)
		}
		if status >= 500 && (msg == "" || msg == tc.err.Error()) {
			t.Errorf("%v: message %q leaks the error or is empty", tc.err, msg)
		}
	}
}

func TestValidateIndexName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"news_raw_content", "cbc-news_classified_content", "a_raw_content", "x1_y_raw_content"} {
		if err := ValidateIndexName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "*", ".security", "a,b", "../x", "_all", "News_raw_content", "news", "_raw_content", "-a_raw_content", "a*_raw_content"} {
		if err := ValidateIndexName(bad); !errors.Is(err, errInvalid) {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
	if err := CanDeleteIndex("a_raw_content", 1000, false); !errors.Is(err, errConfirm) {
		t.Errorf("1000 documents without confirm: %v", err)
	}
	if err := CanDeleteIndex("a_raw_content", 999, false); err != nil {
		t.Errorf("999 documents: %v", err)
	}
}
