package httpserver

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// LimitBody caps the body of the routes it guards at maxBytes, below the
// server's MaxBodyBytes: a declared larger body is refused with 413 at
// once, and reading past the cap fails with *http.MaxBytesError, which
// DecodeJSON answers with 413.
func LimitBody(maxBytes int64) gin.HandlerFunc {
	return bodyLimit(maxBytes)
}

// LimitConcurrency lets at most n requests of the routes it guards run at
// once; one more is refused at once with 429 too_many_requests and
// Retry-After, rather than queued, so that costly routes cannot pile up
// memory or CPU.
func LimitConcurrency(n int, retryAfterSeconds int) gin.HandlerFunc {
	if n <= 0 {
		panic(fmt.Sprintf("httpserver.LimitConcurrency: n must be positive (got %d)", n))
	}
	if retryAfterSeconds <= 0 {
		retryAfterSeconds = 1
	}
	slots := make(chan struct{}, n)
	return func(c *gin.Context) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			c.Next()
		default:
			c.Header("Retry-After", strconv.Itoa(retryAfterSeconds))
			WriteError(c, http.StatusTooManyRequests, CodeTooManyRequests,
				fmt.Sprintf("too many requests of this kind at once (at most %d); retry later", n))
		}
	}
}
