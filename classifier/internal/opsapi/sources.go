package opsapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/reprocess"
	"github.com/north-cloud/classifier/internal/sourcepriority"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Bounds of the reprocess routes.
const (
	// maxDocsMax bounds max_docs of one request.
	maxDocsMax = 10_000_000
	// reprocessListLimit is how many tasks GET /sources/:name/reprocess
	// lists per page by default, newest first, and reprocessListMax the
	// most a page may ask for (limit).
	reprocessListLimit = 20
	reprocessListMax   = 100
	// busyRetryAfter is the Retry-After of a 429 from a busy replica.
	busyRetryAfter = 30
	// reprocessTimeout bounds a request's own work (checking the index,
	// recording the task); the task runs in the background.
	reprocessTimeout = 10 * time.Second
)

// sourceParam reads the :name of a route on one source's marks or
// reprocessing: the prefix of its raw index.
func sourceParam(c *gin.Context) (string, bool) {
	name, ok := httpserver.ParamText(c, "name", maxSourceBytes)
	if !ok {
		return "", false
	}
	if !contentindex.ValidSource(name) {
		httpserver.WriteBadRequest(c, fmt.Sprintf("source must be the prefix of a raw index: lowercase letters, digits, '_' and '-', "+
			"starting with a letter or digit, at most 200 characters (got %q)", name))
		return "", false
	}
	return name, true
}

func (h *handler) getPriority(c *gin.Context) {
	source, ok := sourceParam(c)
	if !ok || !h.havePriorities(c) {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, dbTimeout)
	defer cancel()
	m, err := h.Priorities.Get(ctx, source)
	if err != nil {
		h.fail(c, "get source priority", err)
		return
	}
	c.JSON(http.StatusOK, m)
}

// priorityBody is the body of PUT /sources/:name/priority.
type priorityBody struct {
	Priority string `json:"priority"`
}

func (h *handler) putPriority(c *gin.Context) {
	source, ok := sourceParam(c)
	if !ok || !h.havePriorities(c) {
		return
	}
	var body priorityBody
	if !httpserver.DecodeJSON(c, &body) {
		return
	}
	p, err := sourcepriority.Parse(body.Priority)
	if err != nil {
		httpserver.WriteBadRequest(c, err.Error())
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, dbTimeout)
	defer cancel()
	m, err := h.Priorities.Set(ctx, source, p, auth.Subject(c))
	switch {
	case errors.Is(err, sourcepriority.ErrUnknownSource):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, fmt.Sprintf(
			"source %s does not exist: it has no raw index %s and no classified documents", source, contentindex.RawIndex(source)))
		return
	case errors.Is(err, sourcepriority.ErrTooManyMarks):
		httpserver.WriteError(c, http.StatusConflict, httpserver.CodeConflict, fmt.Sprintf(
			"at most %d sources may be marked other than normal at once; set one back to normal first", h.Priorities.MaxLowMarks()))
		return
	case err != nil:
		h.fail(c, "set source priority", err)
		return
	}
	h.Logger.InfoContext(ctx, "source priority set", "source", source, "priority", p, "by", auth.Subject(c))
	c.JSON(http.StatusOK, m)
}

func (h *handler) havePriorities(c *gin.Context) bool {
	if h.Priorities == nil {
		httpserver.WriteError(c, http.StatusServiceUnavailable, httpserver.CodeUnavailable, "this classifier keeps no source priorities")
		return false
	}
	return true
}

func (h *handler) haveReprocess(c *gin.Context) bool {
	if h.Reprocess == nil {
		httpserver.WriteError(c, http.StatusServiceUnavailable, httpserver.CodeUnavailable, "this classifier runs no reprocess requests")
		return false
	}
	return true
}

// reprocessBody is the body of POST /sources/:name/reprocess; an empty
// body takes the defaults.
type reprocessBody struct {
	// Scope is "classified" (the default) or "all" (classified and failed).
	Scope string `json:"scope"`
	// MaxDocs bounds the documents set back to pending.
	MaxDocs *int `json:"max_docs"`
}

func (h *handler) postReprocess(c *gin.Context) {
	source, ok := sourceParam(c)
	if !ok || !h.haveReprocess(c) {
		return
	}
	var body reprocessBody
	if c.Request.ContentLength != 0 && !httpserver.DecodeJSON(c, &body) {
		return
	}
	req := reprocess.Request{Source: source, Scope: body.Scope, By: auth.Subject(c)}
	switch body.Scope {
	case "", reprocess.ScopeClassified, reprocess.ScopeAll:
	default:
		httpserver.WriteBadRequest(c, fmt.Sprintf("scope must be %q or %q (got %q)", reprocess.ScopeClassified, reprocess.ScopeAll, body.Scope))
		return
	}
	if body.MaxDocs != nil {
		if *body.MaxDocs < 1 || *body.MaxDocs > maxDocsMax {
			httpserver.WriteBadRequest(c, fmt.Sprintf("max_docs must be 1..%d (got %d)", maxDocsMax, *body.MaxDocs))
			return
		}
		req.MaxDocs = *body.MaxDocs
	}
	ctx, cancel := httpserver.WithTimeout(c, reprocessTimeout)
	defer cancel()
	task, err := h.Reprocess.Submit(ctx, req)
	var running *reprocess.RunningError
	switch {
	case err == nil:
		c.Header("Location", fmt.Sprintf("/api/v1/sources/%s/reprocess/%s", source, task.ID))
		c.JSON(http.StatusAccepted, task)
	case errors.Is(err, reprocess.ErrNotFound):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, fmt.Sprintf("source %s has no raw index %s", source, contentindex.RawIndex(source)))
	case errors.As(err, &running):
		httpserver.WriteError(c, http.StatusConflict, httpserver.CodeConflict, running.Error())
	case errors.Is(err, reprocess.ErrBusy):
		c.Header("Retry-After", fmt.Sprint(busyRetryAfter))
		httpserver.WriteError(c, http.StatusTooManyRequests, httpserver.CodeTooManyRequests, err.Error())
	default:
		h.Logger.ErrorContext(ctx, "reprocess request failed", "source", source, "error", err)
		httpserver.WriteError(c, http.StatusServiceUnavailable, httpserver.CodeUnavailable,
			"reprocess request failed: Elasticsearch or the classifier database did not answer, or the classifier is stopping")
	}
}

// GET /sources/:name/reprocess?limit=&cursor=: every run of the source,
// newest first, a page at a time; next_cursor continues the list.
func (h *handler) listReprocess(c *gin.Context) {
	// Bad input is 400 whether or not this classifier runs reprocesses.
	source, ok := sourceParam(c)
	if !ok {
		return
	}
	limit, ok := httpserver.QueryLimit(c, reprocessListLimit, reprocessListMax)
	if !ok {
		return
	}
	k, ok := httpserver.QueryCursor(c)
	if !ok || !h.haveReprocess(c) {
		return
	}
	var after *reprocess.Cursor
	if k != nil {
		after = &reprocess.Cursor{StartedAt: k.CreatedAt, ID: k.ID}
	}
	ctx, cancel := httpserver.WithTimeout(c, dbTimeout)
	defer cancel()
	tasks, err := h.Reprocess.List(ctx, source, limit+1, after)
	if err != nil {
		h.fail(c, "list reprocess tasks", err)
		return
	}
	var next *string
	if len(tasks) > limit {
		tasks = tasks[:limit]
		last := tasks[len(tasks)-1]
		cursor := httpserver.EncodeCursor(httpserver.Keyset{CreatedAt: last.StartedAt, ID: last.ID})
		next = &cursor
	}
	c.JSON(http.StatusOK, gin.H{"tasks": tasks, "next_cursor": next})
}

// taskParams reads the source and task of a reprocess task's route,
// answering the request when they are not valid or reprocess is off.
func (h *handler) taskParams(c *gin.Context) (source, id string, ok bool) {
	source, ok = sourceParam(c)
	if !ok || !h.haveReprocess(c) {
		return "", "", false
	}
	id = c.Param("task")
	if !httpserver.IsUUID(id) {
		httpserver.WriteBadRequest(c, "task must be a UUID")
		return "", "", false
	}
	return source, id, true
}

func (h *handler) getReprocess(c *gin.Context) {
	source, id, ok := h.taskParams(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, dbTimeout)
	defer cancel()
	task, err := h.Reprocess.Get(ctx, source, id)
	switch {
	case errors.Is(err, reprocess.ErrNotFound):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, err.Error())
	case err != nil:
		h.fail(c, "get reprocess task", err)
	default:
		c.JSON(http.StatusOK, task)
	}
}

func (h *handler) cancelReprocess(c *gin.Context) {
	source, id, ok := h.taskParams(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, dbTimeout)
	defer cancel()
	task, err := h.Reprocess.Cancel(ctx, source, id, auth.Subject(c))
	switch {
	case errors.Is(err, reprocess.ErrNotFound):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, err.Error())
	case errors.Is(err, reprocess.ErrNotRunning):
		httpserver.WriteError(c, http.StatusConflict, httpserver.CodeConflict, fmt.Sprintf(
			"reprocess task %s has ended (%s); there is nothing to cancel", id, task.Status))
	case err != nil:
		h.fail(c, "cancel reprocess task", err)
	default:
		c.JSON(http.StatusAccepted, task)
	}
}
