package httpserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// WithTimeout returns the request's context bounded by d: the deadline of
// a handler's database or Elasticsearch work, so that a stalled dependency
// answers 503 within it rather than holding the request.
func WithTimeout(c *gin.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request.Context(), d)
}

// QueryLimit reads the page size ?limit= as an integer from 1 to most,
// def when it is absent. It answers a bad one itself with 400 bad_request
// and returns false.
func QueryLimit(c *gin.Context, def, most int) (int, bool) {
	v, ok := c.GetQuery("limit")
	if !ok {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		WriteBadRequest(c, fmt.Sprintf("limit must be an integer from 1 to %d (got %q)", most, v))
		return 0, false
	}
	return n, true
}

// QueryCursor reads the keyset cursor ?cursor=, nil when it is absent or
// empty (the first page). It answers one this API did not hand out itself
// with 400 invalid_cursor and returns false.
func QueryCursor(c *gin.Context) (*Keyset, bool) {
	v := c.Query("cursor")
	if v == "" {
		return nil, true
	}
	k, err := DecodeCursor(v)
	if err != nil {
		WriteRequestError(c, err)
		return nil, false
	}
	return &k, true
}

// WriteBadRequest answers 400 bad_request with msg, which names the
// parameter or field at fault.
func WriteBadRequest(c *gin.Context, msg string) {
	WriteError(c, http.StatusBadRequest, CodeBadRequest, msg)
}

// Respond answers v as JSON with status when err is nil, and hands err to
// fail, the service's one map of errors to answers, otherwise: how a
// handler ends after its one store call.
func Respond[T any](c *gin.Context, status int, v T, err error, fail func(*gin.Context, error)) {
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(status, v)
}
