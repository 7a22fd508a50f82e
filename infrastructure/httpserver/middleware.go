package httpserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
)

// RequestIDHeader carries the request id in and out, so one id follows a
// request through every service and log line.
const RequestIDHeader = "X-Request-ID"

const maxRequestIDLen = 128

type requestIDKey struct{}

// RequestID returns the id of the request ctx belongs to, or "" outside a
// request. It accepts the request's context or the *gin.Context itself.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// recovery turns a panicking handler into a 500 without leaking the panic
// value to the client, and logs it with its stack so it can be fixed.
func recovery(logger *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if err, ok := rec.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(rec) // the handler asked net/http to drop the connection
			}
			logger.ErrorContext(c.Request.Context(), "panic in http handler",
				slog.Any("panic", rec),
				slog.String("stack", string(debug.Stack())),
				slog.String("method", c.Request.Method),
				slog.String("path", routePath(c)),
				slog.String("request_id", RequestID(c.Request.Context())),
			)
			if c.Writer.Written() {
				c.Abort()
				return
			}
			WriteError(c, http.StatusInternalServerError, CodeInternal, "internal server error")
		}()
		c.Next()
	}
}

// requestID keeps a sane incoming X-Request-ID or makes a new one, echoes
// it, and stores it in the request context for RequestID.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader(RequestIDHeader)
		if !saneRequestID(id) {
			id = uuid.NewString()
		}
		c.Header(RequestIDHeader, id)
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), requestIDKey{}, id))
		c.Next()
	}
}

// saneRequestID accepts 1 to 128 visible ASCII characters, so a client
// cannot inject control characters or huge values into our logs.
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// accessLog writes one structured line per request. Probes and scrapes are
// logged at debug level so they do not drown the interesting traffic.
func accessLog(logger *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		status := c.Writer.Status()
		level := slog.LevelInfo
		switch path := c.Request.URL.Path; {
		case path == "/health" || path == "/metrics":
			level = slog.LevelDebug
		case status >= http.StatusInternalServerError:
			level = slog.LevelError
		}
		logger.LogAttrs(c.Request.Context(), level, "http request",
			slog.String("method", c.Request.Method),
			slog.String("path", routePath(c)),
			slog.Int("status", status),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.Int("bytes", max(c.Writer.Size(), 0)),
			slog.String("request_id", RequestID(c.Request.Context())),
			slog.String("client_ip", c.ClientIP()),
		)
	}
}

// routePath is the matched route template ("/api/v1/rules/:id"), which keeps
// ids out of the path field, or the raw path when no route matched.
func routePath(c *gin.Context) string {
	if p := c.FullPath(); p != "" {
		return p
	}
	return c.Request.URL.Path
}

// bodyLimit rejects a declared oversized body at once and caps the rest with
// http.MaxBytesReader, whose read error handlers see as *http.MaxBytesError.
func bodyLimit(maxBytes int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > maxBytes {
			WriteError(c, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body is too large")
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBytes)
		c.Next()
	}
}
