package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Error codes the API answers with, in {"error":{"code","message"}}.
const (
	codeInvalid        = "invalid_request"
	codeInvalidJSON    = httpserver.CodeInvalidJSON
	codeInvalidText    = httpserver.CodeInvalidText
	codeTooLarge       = httpserver.CodeBodyTooLarge
	codeNotFound       = httpserver.CodeNotFound
	codeExists         = "already_exists"
	codeConflict       = httpserver.CodeConflict
	codeConfirm        = "confirmation_required"
	codeProtected      = "protected_index"
	codeCursor         = httpserver.CodeInvalidCursor
	codeESBad          = "elasticsearch_rejected"
	codeESUnavailable  = "elasticsearch_unavailable"
	codeESError        = "elasticsearch_error"
	codeESBusy         = "elasticsearch_busy"
	codeTooLargeResult = "result_too_large"
	codeDBUnavailable  = httpserver.CodeDatabaseUnavailable
	codeInternal       = httpserver.CodeInternal
)

// errDatabase marks a failure of the service's own database.
var errDatabase = errors.New("database unavailable")

// statusOf maps an error to the HTTP status, error code and client message;
// this is the one place where errors become responses. Messages never carry
// Go error strings of infrastructure failures, only our own validation
// messages and Elasticsearch's reasons for refusing a request.
func statusOf(err error) (int, string, string) {
	var esErr *indices.Error
	switch {
	case errors.Is(err, errInvalid):
		return http.StatusBadRequest, codeInvalid, strings.TrimPrefix(err.Error(), errInvalid.Error()+": ")
	case errors.Is(err, errCursor):
		return http.StatusBadRequest, codeCursor, strings.TrimPrefix(err.Error(), errCursor.Error()+": ")
	case errors.Is(err, errConfirm):
		return http.StatusBadRequest, codeConfirm, strings.TrimPrefix(err.Error(), errConfirm.Error()+": ")
	case errors.Is(err, errProtected):
		return http.StatusForbidden, codeProtected, strings.TrimPrefix(err.Error(), errProtected.Error()+": ")
	case errors.Is(err, errDatabase):
		return http.StatusServiceUnavailable, codeDBUnavailable, "the audit database is unavailable; nothing was changed"
	case errors.As(err, &esErr):
		switch esErr.Kind {
		case indices.ErrNotFound:
			return http.StatusNotFound, codeNotFound, esReason(esErr, "not found")
		case indices.ErrExists:
			return http.StatusConflict, codeExists, esReason(esErr, "index already exists")
		case indices.ErrConflict:
			return http.StatusConflict, codeConflict, esReason(esErr, "conflict")
		case indices.ErrBadRequest:
			return http.StatusBadRequest, codeESBad, esReason(esErr, "elasticsearch rejected the request")
		case indices.ErrUnavailable:
			return http.StatusServiceUnavailable, codeESUnavailable, "elasticsearch is unavailable"
		case indices.ErrBusy:
			return http.StatusTooManyRequests, codeESBusy, "elasticsearch refused the request for its load; retry shortly"
		case indices.ErrTooLarge:
			return http.StatusBadRequest, codeTooLargeResult, esReason(esErr, "the result is too large") +
				": ask for fewer documents (size) or fewer fields (_source)"
		default:
			return http.StatusBadGateway, codeESError, "elasticsearch failed to answer the request"
		}
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, codeESUnavailable, "elasticsearch did not answer in time"
	default:
		return http.StatusInternalServerError, codeInternal, "internal error"
	}
}

func esReason(e *indices.Error, def string) string {
	if e.Reason != "" {
		return e.Reason
	}
	return def
}

// fail answers with the status and code of err, logging server-side
// failures with the full error.
func (h *Handler) fail(c *gin.Context, err error) {
	status, code, msg := statusOf(err)
	if status == http.StatusTooManyRequests {
		c.Header("Retry-After", strconv.Itoa(readsRetryAfterSeconds))
	}
	if status >= 500 {
		h.logger.ErrorContext(c.Request.Context(), "request failed", slog.String("path", c.FullPath()), slog.Int("status", status),
			slog.String("request_id", httpserver.RequestID(c)), slog.Any("error", err))
	}
	httpserver.WriteError(c, status, code, msg)
}
