package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
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

// SortField is one sort key of a query.
type SortField struct {
	Field string `json:"field"`
	Order string `json:"order"`
}

// DocumentQueryRequest is the body of POST /api/v1/indices/:name/_query.
type DocumentQueryRequest struct {
	Query     map[string]any `json:"query"`
	Size      *int           `json:"size"`
	From      int            `json:"from"`
	Sort      []SortField    `json:"sort"`
	Source    []string       `json:"_source"`
	Highlight map[string]any `json:"highlight"`
	// SearchAfter continues after a hit's sort values (one per sort field).
	SearchAfter []any `json:"search_after"`
	// Aggs (or its long name Aggregations) are allowlisted aggregations
	// (searchbody.go); their results come back as aggregations.
	Aggs         map[string]any `json:"aggs"`
	Aggregations map[string]any `json:"aggregations"`
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

func (h *Handler) getDocument(c *gin.Context) {
	name, id := c.Param("name"), c.Param("id")
	if err := ValidateIndexName(name); err != nil {
		h.fail(c, err)
		return
	}
	if err := ValidateDocumentID(id); err != nil {
		h.fail(c, err)
		return
	}
	hit, err := h.store.Document(c.Request.Context(), name, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, hit)
}

// intParam reads an optional non-negative integer query parameter.
func intParam(c *gin.Context, name string, def int) (int, error) {
	v, ok := c.GetQuery(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, invalid("%s must be a non-negative integer", name)
	}
	return n, nil
}

// pageSize checks size and from against the caps.
func pageSize(size, from int) error {
	if size > maxPageSize {
		return invalid("size must be at most %d (got %d)", maxPageSize, size)
	}
	if from+size > maxResultWindow {
		return invalid("from + size must be at most %d (got %d); page deeper with the documents cursor", maxResultWindow, from+size)
	}
	return nil
}

func sortClauses(sort []SortField) []any {
	out := make([]any, 0, len(sort)+1)
	for _, s := range sort {
		order := s.Order
		if order == "" {
			order = "asc"
			if s.Field == "_score" {
				order = "desc"
			}
		}
		out = append(out, map[string]any{s.Field: map[string]any{"order": order}})
	}
	return out
}

// docIDField is the keyword field every content document carries with its
// _id (the data contract); it ends every documents sort so the order is
// total. Elasticsearch does not sort on _id itself.
const docIDField = "id"

// documentSort is the sort of the documents endpoint: the caller's sort,
// then the id field as the tie-breaker.
func documentSort(sort []SortField) []any {
	out := sortClauses(sort)
	for _, s := range sort {
		if s.Field == docIDField {
			return out
		}
	}
	// unmapped_type: an index without the field yet (empty) still sorts.
	return append(out, map[string]any{docIDField: map[string]any{"order": "asc", "unmapped_type": "keyword"}})
}

// listDocuments pages through an index in a stable order: next_cursor
// continues after the last hit with search_after on the sort (ending with
// the unique id field), so pages beyond 10,000 documents never use from,
// and no page leaves a point in time or other search context open. Each
// page sees the index as it is when that page is read.
func (h *Handler) listDocuments(c *gin.Context) {
	name := c.Param("name")
	if err := ValidateIndexName(name); err != nil {
		h.fail(c, err)
		return
	}
	size, err := intParam(c, "size", defaultPageSize)
	if err != nil {
		h.fail(c, err)
		return
	}
	from, err := intParam(c, "from", 0)
	if err != nil {
		h.fail(c, err)
		return
	}
	if err := pageSize(size, from); err != nil {
		h.fail(c, err)
		return
	}
	if size == 0 {
		h.fail(c, invalid("size must be at least 1"))
		return
	}
	var cur cursor
	if raw := c.Query("cursor"); raw != "" {
		if from != 0 || len(c.QueryArray("sort")) > 0 {
			h.fail(c, invalid("cursor cannot be combined with from or sort (the cursor carries them)"))
			return
		}
		if cur, err = h.cursors.decode(raw, name); err != nil {
			h.fail(c, err)
			return
		}
	} else {
		for _, s := range c.QueryArray("sort") {
			field, order, _ := strings.Cut(s, ":")
			cur.Sort = append(cur.Sort, SortField{Field: field, Order: order})
		}
		if err := ValidateSort(cur.Sort); err != nil {
			h.fail(c, err)
			return
		}
		for _, s := range cur.Sort {
			if s.Field == "_doc" {
				// Index order changes between searches without a point in
				// time: the cursor would skip or repeat documents.
				h.fail(c, invalid("sort by _doc is not stable across pages; sort by a field (the default order is by id)"))
				return
			}
		}
		cur.Index = name
	}
	sort := documentSort(cur.Sort)
	if cur.SearchAfter != nil && len(cur.SearchAfter) != len(sort) {
		h.fail(c, invalid("cursor does not match its sort; start again without one"))
		return
	}
	res, err := h.store.Search(c.Request.Context(), name, indices.Search{
		Body:        map[string]any{"sort": sort},
		Size:        size,
		From:        from,
		Timeout:     h.queryTimeout,
		SearchAfter: cur.SearchAfter,
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	if n := len(res.Hits); n == size && res.Hits[n-1].Sort != nil {
		next := cursor{Index: name, SearchAfter: res.Hits[n-1].Sort, Sort: cur.Sort}
		if res.NextCursor, err = h.cursors.encode(next); err != nil {
			h.fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, res)
}

// query runs an ad-hoc query within the safety caps.
func (h *Handler) query(c *gin.Context) {
	name := c.Param("name")
	if err := ValidateIndexName(name); err != nil {
		h.fail(c, err)
		return
	}
	var req DocumentQueryRequest
	if !h.bindJSON(c, &req) {
		return
	}
	size := defaultPageSize
	if req.Size != nil {
		size = *req.Size
	}
	if size < 0 || req.From < 0 {
		h.fail(c, invalid("size and from must not be negative"))
		return
	}
	if err := pageSize(size, req.From); err != nil {
		h.fail(c, err)
		return
	}
	if err := ValidateSort(req.Sort); err != nil {
		h.fail(c, err)
		return
	}
	if err := ValidateSourceFields(req.Source); err != nil {
		h.fail(c, err)
		return
	}
	if err := ValidateQuery(req.Query); err != nil {
		h.fail(c, err)
		return
	}
	if err := ValidateHighlight(req.Highlight); err != nil {
		h.fail(c, err)
		return
	}
	if req.Aggs != nil && req.Aggregations != nil {
		h.fail(c, invalid("give aggs or aggregations, not both"))
		return
	}
	aggs := req.Aggs
	if aggs == nil {
		aggs = req.Aggregations
	}
	if err := ValidateAggs(aggs); err != nil {
		h.fail(c, err)
		return
	}
	if err := ValidateSearchAfter(req.SearchAfter, req.Sort, req.From); err != nil {
		h.fail(c, err)
		return
	}
	body := map[string]any{}
	if len(aggs) > 0 {
		body["aggs"] = aggs
	}
	if len(req.Query) > 0 {
		body["query"] = req.Query
	}
	if len(req.Sort) > 0 {
		body["sort"] = sortClauses(req.Sort)
	}
	if req.Source != nil {
		body["_source"] = req.Source
	}
	if len(req.Highlight) > 0 {
		body["highlight"] = req.Highlight
	}
	res, err := h.store.Search(c.Request.Context(), name, indices.Search{Body: body, Size: size, From: req.From, Timeout: h.queryTimeout, SearchAfter: req.SearchAfter})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
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

// AuditListResponse answers GET /api/v1/audit.
type AuditListResponse struct {
	Entries []audit.Entry `json:"entries"`
	// NextBeforeID, when set, fetches the next (older) page as ?before_id=.
	NextBeforeID int64 `json:"next_before_id,omitempty"`
}

func (h *Handler) listAudit(c *gin.Context) {
	f := audit.Filter{Actor: c.Query("actor"), Action: c.Query("action"), Index: c.Query("index"), Outcome: c.Query("outcome")}
	// An enum given empty is a mistake, not "any": refused like any other
	// value outside the enum.
	for _, name := range []string{"action", "outcome"} {
		if v, ok := c.GetQuery(name); ok && v == "" {
			h.fail(c, invalid("%s must not be empty", name))
			return
		}
	}
	switch f.Action {
	case "", audit.ActionCreate, audit.ActionDelete, audit.ActionRefresh:
	default:
		h.fail(c, invalid("action must be create, delete or refresh"))
		return
	}
	switch f.Outcome {
	case "", audit.OutcomePending, audit.OutcomeSuccess, audit.OutcomeFailure:
	default:
		h.fail(c, invalid("outcome must be pending, success or failure"))
		return
	}
	if len(f.Actor) > 255 || len(f.Index) > 255 {
		h.fail(c, invalid("actor and index must be at most 255 bytes"))
		return
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v, ok := c.GetQuery(p.name); ok {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				h.fail(c, invalid("%s must be an RFC 3339 time such as 2026-11-25T10:00:00Z", p.name))
				return
			}
			// In UTC: Postgres refuses offsets Go accepts (such as -21:26).
			*p.dst = t.UTC()
		}
	}
	limit, err := intParam(c, "limit", audit.ListLimitDefault)
	if err != nil || limit < 1 || limit > audit.ListLimitMax {
		h.fail(c, invalid("limit must be between 1 and %d", audit.ListLimitMax))
		return
	}
	f.Limit = limit
	if v := c.Query("before_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			h.fail(c, invalid("before_id must be a positive integer"))
			return
		}
		f.BeforeID = id
	}
	entries, err := h.audit.List(c.Request.Context(), f)
	if err != nil {
		h.logger.ErrorContext(c.Request.Context(), "list audit entries", "error", err)
		h.fail(c, errDatabase)
		return
	}
	// Entries are bounded in bytes when stored and listed; the page is
	// bounded too, ending early (with next_before_id) when it would exceed
	// audit.MaxPageBytes.
	page, cut := audit.FitPage(entries, audit.MaxPageBytes)
	resp := AuditListResponse{Entries: page}
	if (cut || len(entries) == limit) && len(page) > 0 {
		resp.NextBeforeID = page[len(page)-1].ID
	}
	c.JSON(http.StatusOK, resp)
}
