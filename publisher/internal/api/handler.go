// Package api serves the publisher's operator API under /api/v1: outbox
// statistics, the outbox entries with filters and cursor pagination,
// re-queueing of failed rows, and the channels seen.
package api

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

	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/publisher/internal/domain"
	"github.com/north-cloud/publisher/internal/openapi"
)

// Store is what the API needs from the outbox; *outbox.Repository is it.
type Store interface {
	StatsMatching(ctx context.Context, f domain.OutboxFilter) (domain.OutboxStats, error)
	List(ctx context.Context, f domain.OutboxFilter, after *domain.Cursor, limit int) ([]domain.OutboxEntry, *domain.Cursor, error)
	Requeue(ctx context.Context, id string) (domain.OutboxEntry, error)
	RequeueMatching(ctx context.Context, f domain.OutboxFilter) (int64, error)
	Channels(ctx context.Context) ([]domain.ChannelStats, error)
}

// Page sizes of GET /api/v1/outbox.
const (
	LimitDefault = 50
	LimitMax     = 500
)

// maxFilterBytes bounds the source, source_contains and channel filters:
// the longest source and channel names are far shorter.
const maxFilterBytes = 255

// maxColumnChars bounds, in characters, the content_id and index filters:
// the width of the columns they are compared with.
const maxColumnChars = 255

// Handler serves the API.
type Handler struct {
	store  Store
	logger *slog.Logger
}

// New returns a handler over store.
func New(store Store, logger *slog.Logger) *Handler {
	return &Handler{store: store, logger: logger.With("component", "api")}
}

// Register adds the routes to rg, which the caller guards with the JWT
// middleware (/api/v1), and the OpenAPI document at /openapi.json.
func (h *Handler) Register(rg *gin.RouterGroup) error {
	doc, err := openapi.Load()
	if err != nil {
		return fmt.Errorf("register publisher api: %w", err)
	}
	// Same shape as the index-manager's route table: kept apart because
	// each service registers its own endpoints.
	rg.GET("/openapi.json", gin.WrapH(doc))
	rg.GET("/outbox/stats", h.stats)
	rg.GET("/outbox", h.list)
	rg.POST("/outbox/retry", h.requeueMatching)
	rg.POST("/outbox/:id/retry", h.requeue)
	rg.GET("/channels", h.channels)
	return nil
}

// Entry is an outbox row as the API shows it.
type Entry struct {
	ID               string     `json:"id"`
	ContentID        string     `json:"content_id"`
	Source           string     `json:"source"`
	Index            string     `json:"index"`
	ContentType      string     `json:"content_type"`
	Channel          string     `json:"channel"`
	Topics           []string   `json:"topics"`
	QualityScore     int        `json:"quality_score"`
	IsCrimeRelated   bool       `json:"is_crime_related"`
	CrimeSubcategory *string    `json:"crime_subcategory"`
	Title            string     `json:"title"`
	URL              string     `json:"url"`
	Status           string     `json:"status"`
	RetryCount       int        `json:"retry_count"`
	MaxRetries       int        `json:"max_retries"`
	Exhausted        bool       `json:"exhausted"`
	ErrorMessage     *string    `json:"error_message"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	PublishedAt      *time.Time `json:"published_at"`
	NextRetryAt      *time.Time `json:"next_retry_at"`
}

func toEntry(e domain.OutboxEntry) Entry {
	topics := e.Topics
	if topics == nil {
		topics = []string{}
	}
	return Entry{
		ID: e.ID, ContentID: e.ContentID, Source: e.SourceName, Index: e.IndexName, ContentType: e.ContentType,
		Channel: e.RoutingKey(), Topics: topics, QualityScore: e.QualityScore, IsCrimeRelated: e.IsCrimeRelated,
		CrimeSubcategory: e.CrimeSubcategory, Title: e.Title, URL: e.URL, Status: string(e.Status),
		RetryCount: e.RetryCount, MaxRetries: e.MaxRetries,
		Exhausted:    e.Status == domain.OutboxStatusFailed && !e.ShouldRetry(),
		ErrorMessage: e.ErrorMessage, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
		PublishedAt: e.PublishedAt, NextRetryAt: e.NextRetryAt,
	}
}

// stats answers the figures of the rows matching the list's filters other
// than status (the figures are by status), so they follow the list.
func (h *Handler) stats(c *gin.Context) {
	f, err := filterFromQuery(c, false)
	if err != nil {
		badRequest(c, err)
		return
	}
	s, err := h.store.StatsMatching(c, f)
	httpserver.Respond(c, http.StatusOK, s, err, h.fail)
}

// ListResponse is the body of GET /api/v1/outbox.
type ListResponse struct {
	Entries []Entry `json:"entries"`
	// NextCursor, when not empty, is passed as ?cursor= for the next page.
	NextCursor string `json:"next_cursor"`
}

func (h *Handler) list(c *gin.Context) {
	f, err := filterFromQuery(c, true)
	if err != nil {
		badRequest(c, err)
		return
	}
	limit, ok := httpserver.QueryLimit(c, LimitDefault, LimitMax)
	if !ok {
		return
	}
	k, ok := httpserver.QueryCursor(c)
	if !ok {
		return
	}
	var after *domain.Cursor
	if k != nil {
		after = &domain.Cursor{CreatedAt: k.CreatedAt, ID: k.ID}
	}
	entries, next, err := h.store.List(c, f, after, limit)
	if err != nil {
		h.fail(c, err)
		return
	}
	resp := ListResponse{Entries: make([]Entry, 0, len(entries))}
	for _, e := range entries {
		resp.Entries = append(resp.Entries, toEntry(e))
	}
	if next != nil {
		resp.NextCursor = httpserver.EncodeCursor(httpserver.Keyset{CreatedAt: next.CreatedAt, ID: next.ID})
	}
	c.JSON(http.StatusOK, resp)
}

func (h *Handler) requeue(c *gin.Context) {
	id := c.Param("id")
	if !httpserver.IsUUID(id) {
		badRequest(c, fmt.Errorf("id must be a UUID (got %q)", id))
		return
	}
	e, err := h.store.Requeue(c, strings.ToLower(id))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.logger.InfoContext(c, "outbox entry re-queued", "outbox_id", e.ID, "content_id", e.ContentID)
	c.JSON(http.StatusOK, toEntry(e))
}

// RequeueRequest is the body of POST /api/v1/outbox/retry. Every failed row
// matching all given fields goes back to pending. At least one filter, or
// "all": true, is required: an empty object (or a null or empty body) is a
// 400, never a re-queue of every failed row by accident.
type RequeueRequest struct {
	Source string `json:"source"`
	// SourceContains keeps rows whose source name contains it, ignoring
	// case, as the list's filter of the same name.
	SourceContains string `json:"source_contains"`
	Channel        string `json:"channel"`
	Crime          *bool  `json:"crime"`
	// Exhausted keeps only rows that used all their retries (true) or only
	// rows still waiting for a retry (false).
	Exhausted *bool `json:"exhausted"`
	// All, true, re-queues every failed row; it cannot be combined with a
	// filter.
	All bool `json:"all"`
}

func (r RequeueRequest) hasFilter() bool {
	return r.Source != "" || r.SourceContains != "" || r.Channel != "" || r.Crime != nil || r.Exhausted != nil
}

// RequeueResponse is the answer of POST /api/v1/outbox/retry.
type RequeueResponse struct {
	Requeued int64 `json:"requeued"`
}

func (h *Handler) requeueMatching(c *gin.Context) {
	var req RequeueRequest
	if !httpserver.DecodeJSON(c, &req) {
		return
	}
	switch {
	case req.All && req.hasFilter():
		badRequest(c, errors.New(`"all": true re-queues every failed row; send it without filters`))
		return
	case !req.All && !req.hasFilter():
		badRequest(c, errors.New(`give a filter (source, source_contains, channel, crime, exhausted) or "all": true to re-queue every failed row`))
		return
	case len(req.Source) > maxFilterBytes || len(req.SourceContains) > maxFilterBytes || len(req.Channel) > maxFilterBytes:
		badRequest(c, fmt.Errorf("source, source_contains and channel must be at most %d bytes", maxFilterBytes))
		return
	}
	f := domain.OutboxFilter{
		Status: domain.OutboxStatusFailed, Source: req.Source, SourceContains: req.SourceContains,
		Channel: req.Channel, Crime: req.Crime, Exhausted: req.Exhausted,
	}
	n, err := h.store.RequeueMatching(c, f)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.logger.InfoContext(c, "failed outbox entries re-queued", "rows", n, "source", req.Source, "source_contains", req.SourceContains, "channel", req.Channel, "all", req.All)
	c.JSON(http.StatusOK, RequeueResponse{Requeued: n})
}

// ChannelsResponse is the body of GET /api/v1/channels.
type ChannelsResponse struct {
	Channels []domain.ChannelStats `json:"channels"`
}

func (h *Handler) channels(c *gin.Context) {
	chs, err := h.store.Channels(c)
	httpserver.Respond(c, http.StatusOK, ChannelsResponse{Channels: chs}, err, h.fail)
}

var statuses = map[string]domain.OutboxStatus{
	"pending": domain.OutboxStatusPending, "publishing": domain.OutboxStatusPublishing,
	"published": domain.OutboxStatusPublished, "failed": domain.OutboxStatusFailed,
}

func filterFromQuery(c *gin.Context, withStatus bool) (domain.OutboxFilter, error) {
	var f domain.OutboxFilter
	if v, ok := c.GetQuery("status"); ok && withStatus {
		s, ok := statuses[v]
		if !ok {
			return f, fmt.Errorf("status must be pending, publishing, published or failed (got %q)", v)
		}
		f.Status = s
	}
	f.Source = c.Query("source")
	f.SourceContains = c.Query("source_contains")
	f.Channel = c.Query("channel")
	if len(f.Source) > maxFilterBytes || len(f.SourceContains) > maxFilterBytes || len(f.Channel) > maxFilterBytes {
		return f, fmt.Errorf("source, source_contains and channel must be at most %d bytes", maxFilterBytes)
	}
	f.ContentID, f.Index = c.Query("content_id"), c.Query("index")
	for name, v := range map[string]string{"content_id": f.ContentID, "index": f.Index} {
		if n := utf8.RuneCountInString(v); n > maxColumnChars {
			return f, fmt.Errorf("%s must be at most %d characters (got %d)", name, maxColumnChars, n)
		}
	}
	for name, dst := range map[string]**bool{"crime": &f.Crime, "exhausted": &f.Exhausted} {
		if v, ok := c.GetQuery(name); ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return f, fmt.Errorf("%s must be true or false (got %q)", name, v)
			}
			*dst = &b
		}
	}
	return f, nil
}

func badRequest(c *gin.Context, err error) {
	httpserver.WriteBadRequest(c, err.Error())
}

// fail maps errors to status codes in one place.
func (h *Handler) fail(c *gin.Context, err error) {
	switch {
	case errors.Is(err, domain.ErrNotFound):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, err.Error())
	case errors.Is(err, domain.ErrConflict):
		httpserver.WriteError(c, http.StatusConflict, httpserver.CodeConflict, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		httpserver.WriteUnavailable(c, h.logger, httpserver.CodeDatabaseUnavailable, "the outbox database did not answer; retry later", err)
	default:
		httpserver.WriteInternal(c, h.logger, err)
	}
}
