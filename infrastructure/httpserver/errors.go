package httpserver

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
)

// The error codes every service answers with, in
// {"error":{"code":...,"message":...}}: one vocabulary, so that a client (the
// dashboard, a script) reads the same failure the same way from every
// service. A service may add codes of its own for failures only it has
// (invalid_rule, protected_index), but never a second name for one of these.
const (
	// CodeBadRequest: a parameter or field is invalid; the message names it.
	CodeBadRequest = "bad_request"
	// CodeInvalidJSON: the body is not exactly one JSON object of the
	// expected shape (syntax, null, unknown field, trailing data, wrong type).
	CodeInvalidJSON = "invalid_json"
	// CodeInvalidText: a path, parameter or JSON string holds a NUL
	// character or invalid UTF-8.
	CodeInvalidText = "invalid_text"
	// CodeInvalidCursor: a pagination cursor this API did not hand out.
	CodeInvalidCursor = "invalid_cursor"
	// CodeBodyTooLarge: the body is over the route's or the server's limit.
	CodeBodyTooLarge = "body_too_large"
	// CodeUnauthorized: no valid bearer token.
	CodeUnauthorized = "unauthorized"
	// CodeForbidden: a valid token whose role may not do this (403).
	CodeForbidden = "forbidden"
	// CodeNotFound: no such route or resource.
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: the route exists, the method does not (405).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeConflict: the change conflicts with the current state.
	CodeConflict = "conflict"
	// CodeUnprocessable: well-formed input that cannot be processed.
	CodeUnprocessable = "unprocessable"
	// CodeTooManyRequests: over a concurrency or rate limit; Retry-After
	// says when to try again.
	CodeTooManyRequests = "too_many_requests"
	// CodeDatabaseUnavailable: the service's database did not answer.
	CodeDatabaseUnavailable = "database_unavailable"
	// CodeUnavailable: another dependency (or part of the service) is
	// unavailable.
	CodeUnavailable = "unavailable"
	// CodeInternal: a bug or an unexpected failure; the detail is logged,
	// never sent.
	CodeInternal = "internal_error"
)

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteError answers with the JSON error shape every service uses,
// {"error":{"code":...,"message":...}}, and aborts the handler chain so no
// later handler writes a second response.
func WriteError(c *gin.Context, status int, code, message string) {
	c.AbortWithStatusJSON(status, errorBody{Error: errorDetail{Code: code, Message: message}})
}

// RequestError is a refusal of the client's input, with the status, code
// and message to answer: the kit's decoders and validators return it, and
// Fail writes it.
type RequestError struct {
	Status  int
	Code    string
	Message string
}

func (e *RequestError) Error() string { return e.Message }

// BadRequest returns a 400 bad_request error with msg.
func BadRequest(msg string) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: msg}
}

// WriteRequestError answers err when it is (or wraps) a *RequestError and
// reports whether it did; other errors are left to the service's own map.
func WriteRequestError(c *gin.Context, err error) bool {
	var re *RequestError
	if !errors.As(err, &re) {
		return false
	}
	WriteError(c, re.Status, re.Code, re.Message)
	return true
}

// WriteUnavailable answers 503 with code (CodeDatabaseUnavailable or
// CodeUnavailable) and msg, which says what did not answer and never holds
// the driver's text, and logs err as a warning with the request id and the
// route: a dependency that is down is the operator's business, not the
// client's.
func WriteUnavailable(c *gin.Context, logger *slog.Logger, code, msg string, err error) {
	ctx := c.Request.Context()
	logger.WarnContext(ctx, "dependency unavailable", slog.String("request_id", RequestID(ctx)),
		slog.String("path", c.FullPath()), slog.Any("error", err))
	WriteError(c, http.StatusServiceUnavailable, code, msg)
}

// WriteInternal answers 500 internal_error without the detail and logs err
// as an error with the request id and the route: a bug or an unexpected
// failure, which the client cannot fix by changing its request.
func WriteInternal(c *gin.Context, logger *slog.Logger, err error) {
	ctx := c.Request.Context()
	logger.ErrorContext(ctx, "request failed", slog.String("request_id", RequestID(ctx)),
		slog.String("path", c.FullPath()), slog.Any("error", err))
	WriteError(c, http.StatusInternalServerError, CodeInternal, "internal error")
}
