package opsapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/httpserver"
)

// sourceStatsTimeout bounds GET /sources/stats: one Elasticsearch search
// with aggregations over every content index, and three SQL statements.
const sourceStatsTimeout = 15 * time.Second

// sourceStats answers, per source, the documents classified, refused at
// the door by field, recorded as duplicates by kind, published and
// dead-lettered, the dead-letter rate and the oldest pending document's
// age (package sourcestats).
func (h *handler) sourceStats(c *gin.Context) {
	if h.SourceStats == nil {
		httpserver.WriteError(c, http.StatusServiceUnavailable, httpserver.CodeUnavailable, "this classifier serves no source statistics")
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, sourceStatsTimeout)
	defer cancel()
	report, err := h.SourceStats.Stats(ctx)
	if err != nil {
		h.Logger.ErrorContext(ctx, "source statistics failed", "error", err)
		httpserver.WriteError(c, http.StatusServiceUnavailable, httpserver.CodeUnavailable,
			"source statistics failed: Elasticsearch or the classifier database did not answer")
		return
	}
	c.JSON(http.StatusOK, report)
}
