package api

import (
	"net/http"
	"regexp"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/contentindex"
)

// Counting across every content index of a type in one request: the
// dashboard's Overview counts the documents classified in the last hour
// over every classified index, and one count per index would grow with the
// number of sources.

// CountResponse answers GET /api/v1/content/_count.
type CountResponse struct {
	IndexType string `json:"index_type"`
	// Pattern is the index pattern counted (open indices only).
	Pattern string `json:"pattern"`
	Prefix  string `json:"prefix,omitempty"`
	Field   string `json:"field,omitempty"`
	Gte     string `json:"gte,omitempty"`
	Count   int64  `json:"count"`
}

// isCountDateField reports whether a count may bound field: the content
// mappings' dates.
func isCountDateField(field string) bool {
	switch field {
	case "crawled_at", "published_date", "classified_at":
		return true
	}
	return false
}

// countPrefixPattern is what a count's prefix may be: the start of a
// source name, so the pattern it makes holds no other wildcard.
var countPrefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,199}$`)

// dateMathPattern is the Elasticsearch date math a count accepts: now,
// minus an amount of a unit, optionally rounded.
var dateMathPattern = regexp.MustCompile(`^now(-[0-9]{1,6}[smhdwMy])?(/[smhdwMy])?$`)

// countContent counts the documents of every open content index of one
// type (index_type: raw_content or classified_content) in one request,
// optionally of the indices whose name starts with prefix, and optionally
// those whose date field is at or after gte (date math such as now-1h, or
// an RFC 3339 time).
func (h *Handler) countContent(c *gin.Context) {
	typ := contentindex.Type(c.Query("index_type"))
	var suffix string
	switch typ {
	case contentindex.TypeRaw:
		suffix = contentindex.RawSuffix
	case contentindex.TypeClassified:
		suffix = contentindex.ClassifiedSuffix
	default:
		h.fail(c, invalid("index_type must be raw_content or classified_content"))
		return
	}
	// Given empty, prefix and field are mistakes, not "any": refused like
	// any other value outside their pattern or enum.
	prefix, hasPrefix := c.GetQuery("prefix")
	if hasPrefix && !countPrefixPattern.MatchString(prefix) {
		h.fail(c, invalid("prefix must be 1 to 200 lowercase letters, digits, _ and -, starting with a letter or digit"))
		return
	}
	field, hasField := c.GetQuery("field")
	gte := c.Query("gte")
	var query map[string]any
	switch {
	case !hasField && gte == "":
	case !isCountDateField(field):
		h.fail(c, invalid("field must be crawled_at, published_date or classified_at"))
		return
	case gte == "":
		h.fail(c, invalid("gte is required with field"))
		return
	default:
		if !dateMathPattern.MatchString(gte) {
			if _, err := time.Parse(time.RFC3339, gte); err != nil {
				h.fail(c, invalid("gte must be date math (now, now-1h, now-7d/d) or an RFC 3339 time"))
				return
			}
		}
		query = map[string]any{"range": map[string]any{field: map[string]any{"gte": gte}}}
	}
	pattern := prefix + "*" + suffix
	n, err := h.store.CountPattern(c.Request.Context(), pattern, query)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, CountResponse{IndexType: string(typ), Pattern: pattern, Prefix: prefix, Field: field, Gte: gte, Count: n})
}
