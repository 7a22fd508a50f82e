package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/indices"
)

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
	release, ok := h.reads.take(c)
	if !ok {
		return
	}
	defer release()
	hit, err := h.store.Document(c.Request.Context(), name, id, h.read(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	if h.hidesBodies(c) {
		stripBodies([]indices.Hit{hit})
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
		if h.hidesBodies(c) && !refuseBodyReferences(c, sortFieldNames(cur.Sort)) {
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
	release, ok := h.reads.take(c)
	if !ok {
		return
	}
	defer release()
	res, err := h.store.Search(c.Request.Context(), name, indices.Search{
		Body:        map[string]any{"sort": sort},
		Size:        size,
		From:        from,
		Timeout:     h.queryTimeout,
		SearchAfter: cur.SearchAfter,
		Read:        h.read(c),
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
	if h.hidesBodies(c) {
		stripBodies(res.Hits)
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
	if h.hidesBodies(c) && !refuseBodyReferences(c, req.Query, req.Highlight, aggs, sortFieldNames(req.Sort)) {
		return
	}
	body := map[string]any{}
	if len(aggs) > 0 {
		body["aggs"] = aggs
	}
	if len(req.Query) > 0 {
		disableLeadingWildcards(req.Query)
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
	if size > 0 { // a count returns no documents and takes no slot
		release, ok := h.reads.take(c)
		if !ok {
			return
		}
		defer release()
	}
	res, err := h.store.Search(c.Request.Context(), name, indices.Search{Body: body, Size: size, From: req.From, Timeout: h.queryTimeout,
		SearchAfter: req.SearchAfter, Read: h.read(c)})
	if err != nil {
		h.fail(c, err)
		return
	}
	if h.hidesBodies(c) {
		stripBodies(res.Hits)
	}
	c.JSON(http.StatusOK, res)
}
