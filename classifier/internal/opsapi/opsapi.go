// Package opsapi serves the classifier's operations API under /api/v1: the
// dead-letter queue (whose routes live with the rest of that feature, in
// package deadletter, and are mounted here), source reputation, per-source
// statistics, priority marks and reprocess requests, the poll state of each
// raw index, and classification statistics. The caller mounts it on a group
// guarded by the JWT middleware.
package opsapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/classifier/internal/reprocess"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/sourcepriority"
	"github.com/north-cloud/classifier/internal/sourcestats"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/httpserver"
)

// dbTimeout bounds the database work of one request.
const dbTimeout = 5 * time.Second

// maxSourceBytes bounds a source name (a path segment), far above any real
// one.
const maxSourceBytes = 255

// Deps are the repositories the API reads and changes.
type Deps struct {
	// DeadLetters is the queue the /dlq routes (package deadletter) serve;
	// without it they are not mounted.
	DeadLetters *deadletter.Repository
	Sources     *reputation.Repository
	History     *storage.HistoryRepository
	Logger      *slog.Logger
	// PollStatus returns the poll state of every raw index
	// (poller.Poller.IndexStatus); GET /sources/poll-status answers 503
	// without it.
	PollStatus func() []poller.IndexStatus
	// SourceStats computes the per-source figures of GET /sources/stats,
	// which answers 503 without it.
	SourceStats *sourcestats.Reader
	// Priorities keeps the sources' priority marks
	// (GET/PUT /sources/:name/priority answer 503 without it).
	Priorities *sourcepriority.Store
	// Reprocess runs reprocess requests (/sources/:name/reprocess answers
	// 503 without it).
	Reprocess *reprocess.Runner
}

type handler struct{ Deps }

// Register mounts the routes on router (the /api/v1 group). The routes on
// one source are below /sources/:name/, so a source named like a fixed
// route ("stats", "poll-status") still has its priority and reprocess
// routes; only GET /sources/:name itself is shadowed for those names.
func Register(router gin.IRouter, d Deps) error {
	if d.DeadLetters != nil {
		if err := deadletter.RegisterRoutes(router, deadletter.RoutesConfig{Repository: d.DeadLetters, Logger: d.Logger, DBTimeout: dbTimeout}); err != nil {
			return fmt.Errorf("register operations api: %w", err)
		}
	}
	h := &handler{d}
	// Route table: same shape as every API's; the routes are this one's own.
	router.GET("/sources", h.listSources)
	router.GET("/sources/poll-status", h.pollStatus)
	router.GET("/sources/stats", h.sourceStats)
	router.GET("/sources/:name", h.getSource)
	router.GET("/sources/:name/priority", h.getPriority)
	router.PUT("/sources/:name/priority", h.putPriority)
	router.POST("/sources/:name/reprocess", h.postReprocess)
	router.GET("/sources/:name/reprocess", h.listReprocess)
	router.GET("/sources/:name/reprocess/:task", h.getReprocess)
	router.POST("/sources/:name/reprocess/:task/cancel", h.cancelReprocess)
	router.GET("/stats", h.stats)
	return nil
}

// fail answers a repository error: 404 for a missing row, otherwise 503 with
// no driver text (the detail goes to the log).
func (h *handler) fail(c *gin.Context, op string, err error) {
	switch {
	case errors.Is(err, reputation.ErrNotFound):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, err.Error())
	default:
		httpserver.WriteUnavailable(c, h.Logger, httpserver.CodeDatabaseUnavailable, op+" failed: the classifier database did not answer", err)
	}
}

func (h *handler) listSources(c *gin.Context) {
	ctx, cancel := httpserver.WithTimeout(c, dbTimeout)
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
	ctx, cancel := httpserver.WithTimeout(c, dbTimeout)
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
		httpserver.WriteBadRequest(c, "window must be a duration up to 168h, such as 1h")
		return
	case err2 != nil || interval < statsIntervalMin || interval > window:
		httpserver.WriteBadRequest(c, "interval must be a duration from 10s up to the window, such as 1m")
		return
	case window/interval > statsBucketsMax:
		httpserver.WriteBadRequest(c, fmt.Sprintf("window/interval must be at most %d buckets", statsBucketsMax))
		return
	}
	source := c.Query("source")
	if len(source) > maxSourceBytes {
		httpserver.WriteBadRequest(c, fmt.Sprintf("source must be a source name of at most %d bytes", maxSourceBytes))
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, dbTimeout)
	defer cancel()
	s, err := h.History.Stats(ctx, storage.StatsQuery{Window: window, Interval: interval, Source: source})
	if err != nil {
		h.fail(c, "classification stats", err)
		return
	}
	c.JSON(http.StatusOK, s)
}
