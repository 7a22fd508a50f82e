package api

import (
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Message bodies and the viewer role (VIEWER_MESSAGE_BODIES, docs/roles.md).
// With bodies hidden, a viewer reads every document without the fields that
// carry its text, and may not search, highlight, sort or aggregate on them:
// a query that matches words in a body would read it one probe at a time.

// MessageBodies says whether viewers read message bodies.
type MessageBodies string

const (
	// BodiesShown lets viewers read bodies (the default).
	BodiesShown MessageBodies = "show"
	// BodiesHidden keeps bodies from viewers.
	BodiesHidden MessageBodies = "hide"
)

// ParseMessageBodies reads VIEWER_MESSAGE_BODIES; empty is BodiesShown.
func ParseMessageBodies(s string) (MessageBodies, error) {
	switch MessageBodies(s) {
	case "", BodiesShown:
		return BodiesShown, nil
	case BodiesHidden:
		return BodiesHidden, nil
	}
	return "", invalid("must be show or hide (got %q)", truncate(s))
}

// BodyFields are the document fields that carry a message's body: the
// raw document's text and page, and the published message's body.
func BodyFields() []string { return []string{"raw_text", "raw_html", "body"} }

// hidesBodies reports whether the request's caller may not read bodies.
func (h *Handler) hidesBodies(c *gin.Context) bool {
	return h.bodies == BodiesHidden && !auth.RoleOf(c).Allows(auth.RoleOperator)
}

// isBodyField reports whether name (a field, a sub-field such as
// raw_text.keyword, or a pattern such as raw_* or *, with an optional
// ^boost) names or matches a body field.
func isBodyField(name string) bool {
	name, _, _ = strings.Cut(name, "^")
	for _, f := range BodyFields() {
		if name == f || strings.HasPrefix(name, f+".") {
			return true
		}
		if ok, _ := path.Match(name, f); ok {
			return true
		}
	}
	return false
}

// searchesAnyField reports whether a query of type typ searches every
// field when it is given none (Elasticsearch's index.query.default_field
// is *).
func searchesAnyField(typ string) bool {
	return typ == "multi_match" || typ == "simple_query_string"
}

// refuseBodyReferences answers 403 and returns false when a viewer's query
// parts name a body field anywhere (as a key or a string value, which may
// also refuse a query merely mentioning such a name: a false refusal is
// safe, a missed one is not), use query_string (whose text can name any
// field), or search without fields.
func refuseBodyReferences(c *gin.Context, parts ...any) bool {
	if msg := bodyReference(parts...); msg != "" {
		httpserver.WriteError(c, http.StatusForbidden, httpserver.CodeForbidden,
			msg+": message bodies are hidden from viewers (VIEWER_MESSAGE_BODIES=hide)")
		return false
	}
	return true
}

// bodyReference returns why parts may not run for a viewer, or "".
func bodyReference(parts ...any) string {
	var walk func(v any) string
	walk = func(v any) string {
		switch t := v.(type) {
		case map[string]any:
			for k, sub := range t {
				if isBodyField(k) {
					return "field " + truncate(k)
				}
				if k == "query_string" {
					return "query_string"
				}
				if body, ok := sub.(map[string]any); ok && searchesAnyField(k) && body["fields"] == nil {
					return k + " without fields"
				}
				if msg := walk(sub); msg != "" {
					return msg
				}
			}
		case []any:
			for _, sub := range t {
				if msg := walk(sub); msg != "" {
					return msg
				}
			}
		case string:
			if isBodyField(t) {
				return "field " + truncate(t)
			}
		}
		return ""
	}
	for _, p := range parts {
		if msg := walk(p); msg != "" {
			return msg
		}
	}
	return ""
}

// read bounds a document read for the caller: the answer's size, and the
// bodies left out when they are hidden from it, so they are never read,
// let alone decoded (stripBodies stays as the last word).
func (h *Handler) read(c *gin.Context) indices.Read {
	r := indices.Read{MaxBytes: h.maxResultBytes}
	if h.hidesBodies(c) {
		r.Exclude = BodyFields()
	}
	return r
}

// stripBodies removes the body fields from hits, and their highlights.
func stripBodies(hits []indices.Hit) {
	for i := range hits {
		for _, f := range BodyFields() {
			delete(hits[i].Source, f)
		}
		for k := range hits[i].Highlight {
			if isBodyField(k) {
				delete(hits[i].Highlight, k)
			}
		}
	}
}

// sortFieldNames lists the fields of a sort as a value bodyReference walks.
func sortFieldNames(sort []SortField) []any {
	out := make([]any, len(sort))
	for i, s := range sort {
		out[i] = s.Field
	}
	return out
}
