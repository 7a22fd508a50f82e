// Package opsapi serves the classifier's operations API under /api/v1: the
// dead-letter queue (list, stats, requeue one or many, delete), source
// reputation, the poll state of each raw index, and classification
// statistics. The caller mounts it on a group guarded by the JWT middleware.
package opsapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Page sizes of GET /dlq.
const (
	LimitDefault = 50
	LimitMax     = 500
)

// dbTimeout bounds the database work of one request.
const dbTimeout = 5 * time.Second

// maxSourceBytes bounds a source name (a path segment or a filter), far
// above any real one.
const maxSourceBytes = 255

// Bounds, in characters, of the content_id and index filters: the widths of
// the columns they are compared with, so a longer value could match nothing.
const (
	maxContentIDChars = 512
	maxIndexChars     = 255
)

// Deps are the repositories the API reads and changes.
type Deps struct {
	DeadLetters *deadletter.Repository
	Sources     *reputation.Repository
	History     *storage.HistoryRepository
	Logger      *slog.Logger
	// PollStatus returns the poll state of every raw index
	// (poller.Poller.IndexStatus); GET /sources/poll-status answers 503
	// without it.
	PollStatus func() []poller.IndexStatus
}

type handler struct{ Deps }

// Register mounts the routes on router (the /api/v1 group).
func Register(router gin.IRouter, d Deps) {
	h := &handler{d}
	router.GET("/dlq", h.listDLQ)
	router.GET("/dlq/stats", h.dlqStats)
	router.POST("/dlq/requeue", h.requeueMatching)
	router.POST("/dlq/:id/requeue", h.requeueOne)
	router.DELETE("/dlq/:id", h.deleteOne)
	router.GET("/sources", h.listSources)
	router.GET("/sources/poll-status", h.pollStatus)
	router.GET("/sources/:name", h.getSource)
	router.GET("/stats", h.stats)
}

func (h *handler) ctx(c *gin.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request.Context(), dbTimeout)
}

// fail answers a repository error: 404 for a missing row, otherwise 503 with
// no driver text (the detail goes to the log).
func (h *handler) fail(c *gin.Context, op string, err error) {
	switch {
	case errors.Is(err, deadletter.ErrNotFound), errors.Is(err, reputation.ErrNotFound):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, err.Error())
	default:
		h.Logger.ErrorContext(c.Request.Context(), "operations API database error", "operation", op, "error", err)
		httpserver.WriteError(c, http.StatusServiceUnavailable, httpserver.CodeDatabaseUnavailable, op+" failed: the classifier database did not answer")
	}
}

func parseFilter(source, code, exhausted string) (deadletter.Filter, error) {
	f := deadletter.Filter{Source: strings.TrimSpace(source), ErrorCode: strings.ToUpper(strings.TrimSpace(code))}
	if exhausted != "" {
		b, err := strconv.ParseBool(exhausted)
		if err != nil {
			return f, fmt.Errorf("exhausted must be true or false (got %q)", exhausted)
		}
		f.Exhausted = &b
	}
	if len(f.Source) > maxSourceBytes || len(f.ErrorCode) > 50 {
		return f, errors.New("source or error_code too long")
	}
	return f, nil
}

type listResponse struct {
	Entries    any     `json:"entries"`
	NextCursor *string `json:"next_cursor"`
}

func badRequest(c *gin.Context, msg string) {
	httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, msg)
}

// documentFilter reads the exact content_id and index filters of GET /dlq,
// which select the entries of one document (the document page's view).
func documentFilter(c *gin.Context, f *deadletter.Filter) error {
	f.ContentID, f.Index = c.Query("content_id"), c.Query("index")
	if n := utf8.RuneCountInString(f.ContentID); n > maxContentIDChars {
		return fmt.Errorf("content_id must be at most %d characters (got %d)", maxContentIDChars, n)
	}
	if n := utf8.RuneCountInString(f.Index); n > maxIndexChars {
		return fmt.Errorf("index must be at most %d characters (got %d)", maxIndexChars, n)
	}
	return nil
}

func (h *handler) listDLQ(c *gin.Context) {
	f, err := parseFilter(c.Query("source"), c.Query("error_code"), c.Query("exhausted"))
	if v, ok := c.GetQuery("exhausted"); err == nil && ok && v == "" {
		err = errors.New(`exhausted must be true or false (got "")`)
	}
	if err == nil {
		err = documentFilter(c, &f)
	}
	if err != nil {
		badRequest(c, err.Error())
		return
	}
	limit := LimitDefault
	if s, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > LimitMax {
			badRequest(c, fmt.Sprintf("limit must be 1..%d", LimitMax))
			return
		}
		limit = n
	}
	var after *deadletter.Cursor
	if s := c.Query("cursor"); s != "" {
		k, err := httpserver.DecodeCursor(s)
		if err != nil {
			httpserver.WriteRequestError(c, err)
			return
		}
		after = &deadletter.Cursor{CreatedAt: k.CreatedAt, ID: k.ID}
	}
	ctx, cancel := h.ctx(c)
	defer cancel()
	entries, err := h.DeadLetters.List(ctx, f, after, limit+1)
	if err != nil {
		h.fail(c, "list dead letters", err)
		return
	}
	resp := listResponse{Entries: entries}
	if len(entries) > limit {
		entries = entries[:limit]
		last := entries[len(entries)-1]
		next := httpserver.EncodeCursor(httpserver.Keyset{CreatedAt: last.CreatedAt, ID: last.ID})
		resp.Entries, resp.NextCursor = entries, &next
	}
	if entries == nil {
		resp.Entries = []any{}
	}
	c.JSON(http.StatusOK, resp)
}

func (h *handler) dlqStats(c *gin.Context) {
	ctx, cancel := h.ctx(c)
	defer cancel()
	s, err := h.DeadLetters.Stats(ctx)
	if err != nil {
		h.fail(c, "dead letter stats", err)
		return
	}
	c.JSON(http.StatusOK, s)
}

func (h *handler) requeueOne(c *gin.Context) {
	id := c.Param("id")
	if !httpserver.IsUUID(id) {
		badRequest(c, "id must be a UUID")
		return
	}
	ctx, cancel := h.ctx(c)
	defer cancel()
	if err := h.DeadLetters.Requeue(ctx, id); err != nil {
		h.fail(c, "requeue dead letter", err)
		return
	}
	h.Logger.InfoContext(ctx, "dead letter requeued", "dlq_id", id, "by", subject(c))
	c.JSON(http.StatusOK, gin.H{"requeued": 1})
}

// filterBody is the body of POST /dlq/requeue: every entry matching all
// given fields is re-queued. At least one filter, or "all": true, is
// required, so that an empty or null body never re-queues everything.
type filterBody struct {
	Source    string `json:"source"`
	ErrorCode string `json:"error_code"`
	Exhausted *bool  `json:"exhausted"`
	All       bool   `json:"all"`
}

func (h *handler) requeueMatching(c *gin.Context) {
	var body filterBody
	if !httpserver.DecodeJSON(c, &body) {
		return
	}
	hasFilter := strings.TrimSpace(body.Source) != "" || strings.TrimSpace(body.ErrorCode) != "" || body.Exhausted != nil
	switch {
	case body.All && hasFilter:
		badRequest(c, `"all": true re-queues every entry; send it without filters`)
		return
	case !body.All && !hasFilter:
		badRequest(c, `give a filter (source, error_code, exhausted) or "all": true to re-queue every entry`)
		return
	}
	exhausted := ""
	if body.Exhausted != nil {
		exhausted = strconv.FormatBool(*body.Exhausted)
	}
	f, err := parseFilter(body.Source, body.ErrorCode, exhausted)
	if err != nil {
		badRequest(c, err.Error())
		return
	}
	ctx, cancel := h.ctx(c)
	defer cancel()
	n, err := h.DeadLetters.RequeueMatching(ctx, f)
	if err != nil {
		h.fail(c, "requeue dead letters", err)
		return
	}
	h.Logger.InfoContext(ctx, "dead letters requeued", "count", n, "source", f.Source, "error_code", f.ErrorCode, "all", body.All, "by", subject(c))
	c.JSON(http.StatusOK, gin.H{"requeued": n})
}

func (h *handler) deleteOne(c *gin.Context) {
	id := c.Param("id")
	if !httpserver.IsUUID(id) {
		badRequest(c, "id must be a UUID")
		return
	}
	ctx, cancel := h.ctx(c)
	defer cancel()
	if err := h.DeadLetters.Delete(ctx, id); err != nil {
		h.fail(c, "delete dead letter", err)
		return
	}
	h.Logger.InfoContext(ctx, "dead letter deleted", "dlq_id", id, "by", subject(c))
	c.Status(http.StatusNoContent)
}

func (h *handler) listSources(c *gin.Context) {
	ctx, cancel := h.ctx(c)
	defer cancel()
	sources, err := h.Sources.List(ctx)
	if err != nil {
		h.fail(c, "list sources", err)
		return
	}
	if sources == nil {
		sources = []reputation.Source{}
	}
	c.JSON(http.StatusOK, gin.H{"sources": sources})
}

func (h *handler) getSource(c *gin.Context) {
	name, ok := httpserver.ParamText(c, "name", maxSourceBytes)
	if !ok {
		return
	}
	ctx, cancel := h.ctx(c)
	defer cancel()
	s, err := h.Sources.Get(ctx, name)
	if err != nil {
		h.fail(c, "get source", err)
		return
	}
	c.JSON(http.StatusOK, s)
}

// Bounds of GET /stats.
const (
	statsWindowMax   = 7 * 24 * time.Hour
	statsIntervalMin = 10 * time.Second
	statsBucketsMax  = 1000
)

func (h *handler) stats(c *gin.Context) {
	window, err1 := time.ParseDuration(c.DefaultQuery("window", "1h"))
	interval, err2 := time.ParseDuration(c.DefaultQuery("interval", "1m"))
	switch {
	case err1 != nil || window <= 0 || window > statsWindowMax:
		badRequest(c, "window must be a duration up to 168h, such as 1h")
		return
	case err2 != nil || interval < statsIntervalMin || interval > window:
		badRequest(c, "interval must be a duration from 10s up to the window, such as 1m")
		return
	case window/interval > statsBucketsMax:
		badRequest(c, fmt.Sprintf("window/interval must be at most %d buckets", statsBucketsMax))
		return
	}
	ctx, cancel := h.ctx(c)
	defer cancel()
	s, err := h.History.Stats(ctx, window, interval)
	if err != nil {
		h.fail(c, "classification stats", err)
		return
	}
	c.JSON(http.StatusOK, s)
}

// subject is the caller named by the token, for the logs.
func subject(c *gin.Context) string {
	if s, ok := c.Get("github.com/north-cloud/infrastructure/auth.subject"); ok {
		if str, ok := s.(string); ok {
			return str
		}
	}
	return ""
}
