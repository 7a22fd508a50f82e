package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/audit"
	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/infrastructure/contentindex"
)

// IndexListResponse answers GET /api/v1/indices.
type IndexListResponse struct {
	Indices []indices.Summary `json:"indices"`
	Total   int               `json:"total"`
}

// CreateIndexRequest is the body of POST /api/v1/indices. Settings are
// limited to the allowlist of ValidateSettings (merged over the project's
// defaults); mappings are refused, since every index the API creates is a
// content index with the shipped strict mapping of its type
// (ValidateMappings).
type CreateIndexRequest struct {
	Name     string         `json:"name"`
	Settings map[string]any `json:"settings"`
	Mappings map[string]any `json:"mappings"`
}

// AckResponse answers create, delete and refresh.
type AckResponse struct {
	Acknowledged bool   `json:"acknowledged"`
	Index        string `json:"index"`
	IndexType    string `json:"index_type,omitempty"`
}

func (h *Handler) listIndices(c *gin.Context) {
	prefix := c.Query("prefix")
	if err := ValidatePrefix(prefix); err != nil {
		h.fail(c, err)
		return
	}
	typ, given := c.GetQuery("index_type")
	switch contentindex.Type(typ) {
	case contentindex.TypeRaw, contentindex.TypeClassified, contentindex.TypeOther:
	case "":
		if given {
			h.fail(c, invalid("index_type must be raw_content, classified_content or other (got an empty value)"))
			return
		}
	default:
		h.fail(c, invalid("index_type must be raw_content, classified_content or other"))
		return
	}
	list, err := h.store.List(c.Request.Context(), prefix)
	if err != nil {
		h.fail(c, err)
		return
	}
	if typ != "" {
		kept := list[:0]
		for _, s := range list {
			if s.IndexType == typ {
				kept = append(kept, s)
			}
		}
		list = kept
	}
	c.JSON(http.StatusOK, IndexListResponse{Indices: list, Total: len(list)})
}

// withRates fills in the rates of stats from the stored samples; a failing
// database leaves them at zero (logged) rather than failing the request.
func (h *Handler) withRates(c *gin.Context, stats *indices.Stats, counters indices.Counters) {
	idx, srch, err := h.rates.Rates(c.Request.Context(), counters, time.Now())
	if err != nil {
		h.logger.WarnContext(c.Request.Context(), "rates unavailable", "index", counters.Index, "error", err)
		return
	}
	stats.IndexingRate, stats.SearchRate = idx, srch
}

func (h *Handler) getIndex(c *gin.Context) {
	name := c.Param("name")
	if err := ValidateIndexName(name); err != nil {
		h.fail(c, err)
		return
	}
	d, counters, err := h.store.Detail(c.Request.Context(), name)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.withRates(c, &d.Stats, counters)
	c.JSON(http.StatusOK, d)
}

func (h *Handler) getMappings(c *gin.Context) {
	name := c.Param("name")
	if err := ValidateIndexName(name); err != nil {
		h.fail(c, err)
		return
	}
	m, err := h.store.Mappings(c.Request.Context(), name)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, m)
}

func (h *Handler) getStats(c *gin.Context) {
	name := c.Param("name")
	if err := ValidateIndexName(name); err != nil {
		h.fail(c, err)
		return
	}
	stats, counters, err := h.store.Stats(c.Request.Context(), name)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.withRates(c, &stats, counters)
	c.JSON(http.StatusOK, stats)
}

func (h *Handler) createIndex(c *gin.Context) {
	var req CreateIndexRequest
	if !h.bindJSON(c, &req) {
		return
	}
	if err := h.checkMutable(req.Name); err != nil {
		h.fail(c, err)
		return
	}
	typ := contentindex.TypeOf(req.Name)
	settings, err := ValidateSettings(req.Settings)
	if err != nil {
		h.fail(c, err)
		return
	}
	mappings, err := ValidateMappings(req.Name, req.Mappings)
	if err != nil {
		h.fail(c, err)
		return
	}
	// Only validated settings reach the audit log: they are a few bytes.
	params := map[string]any{"custom_settings": req.Settings != nil, "settings": settings}
	err = h.audited(c, audit.ActionCreate, req.Name, params, func(ctx context.Context) error {
		return h.store.Create(ctx, req.Name, settings, mappings)
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, AckResponse{Acknowledged: true, Index: req.Name, IndexType: string(typ)})
}

func (h *Handler) deleteIndex(c *gin.Context) {
	name := c.Param("name")
	if err := h.checkMutable(name); err != nil {
		h.fail(c, err)
		return
	}
	confirmed := false
	if v, ok := c.GetQuery("confirm"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			h.fail(c, invalid("confirm must be true or false"))
			return
		}
		confirmed = b
	}
	err := h.audited(c, audit.ActionDelete, name, map[string]any{"confirm": confirmed}, func(ctx context.Context) error {
		count, err := h.store.DocCount(ctx, name)
		if err != nil {
			return err
		}
		if err := CanDeleteIndex(name, count, confirmed); err != nil {
			return err
		}
		return h.store.Delete(ctx, name)
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, AckResponse{Acknowledged: true, Index: name})
}

func (h *Handler) refreshIndex(c *gin.Context) {
	name := c.Param("name")
	if err := h.checkMutable(name); err != nil {
		h.fail(c, err)
		return
	}
	err := h.audited(c, audit.ActionRefresh, name, map[string]any{}, func(ctx context.Context) error {
		return h.store.Refresh(ctx, name)
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, AckResponse{Acknowledged: true, Index: name})
}
