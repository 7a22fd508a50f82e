package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// Bounds of the lookups' input: bad input is a 400, never a call.
const (
	findIDMaxBytes     = 512
	prioritySourcesMax = 300
)

// sourceName is the classifier's rule for a source (the prefix of its raw
// index): lowercase letters, digits, '_' and '-', starting with a letter or
// digit, at most 200 characters.
var sourceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,199}$`)

// findAnswer is the answer of GET /api/find: every place the pipeline
// holds one document id, and the services that did not answer.
type findAnswer struct {
	ID          string            `json:"id"`
	Outbox      []json.RawMessage `json:"outbox"`
	DeadLetters []json.RawMessage `json:"dead_letters"`
	Indices     []foundIndex      `json:"indices"`
	Failures    []findFailure     `json:"failures"`
}

type foundIndex struct {
	Index string `json:"index"`
	Kind  string `json:"kind"` // raw or classified
}

type findFailure struct {
	Service string `json:"service"`
	Message string `json:"message"`
}

// findHandler answers GET /api/find?id=: the outbox and the dead-letter
// queue are asked by content id and name the document's indices; only when
// neither knows it are the raw indices asked (one document GET each, a few
// at a time, here and not in the browser), and then the source's raw and
// classified indices. One browser request whatever the number of sources.
type findHandler struct{ f *fanout }

func (h *findHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if msg := checkFindID(id); msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_id", msg)
		return
	}
	writeJSON(w, http.StatusOK, h.find(r.Context(), r, id))
}

func checkFindID(id string) string {
	switch {
	case strings.TrimSpace(id) == "":
		return "id is required"
	case len(id) > findIDMaxBytes:
		return fmt.Sprintf("id is at most %d bytes", findIDMaxBytes)
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return "id must not hold control characters"
	}
	return ""
}

func (h *findHandler) find(ctx context.Context, r *http.Request, id string) findAnswer {
	f := h.f
	a := findAnswer{ID: id, Outbox: []json.RawMessage{}, DeadLetters: []json.RawMessage{}, Indices: []foundIndex{}, Failures: []findFailure{}}
	failed := map[string]string{}
	var mu sync.Mutex // fail is called from the pooled calls
	fail := func(service string, p part) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := failed[service]; !ok {
			failed[service] = p.Error.Message
		}
	}
	q := url.Values{"content_id": {id}, "limit": {"20"}}.Encode()
	var outbox, dlq part
	pooled(ctx, []func(context.Context){
		func(ctx context.Context) { outbox = f.get(ctx, r, "publisher", f.publisher, "/api/v1/outbox?"+q, true) },
		func(ctx context.Context) { dlq = f.get(ctx, r, "classifier", f.classifier, "/api/v1/dlq?"+q, true) },
	})
	sources := map[string]bool{}
	collect := func(service string, p part, field string) []json.RawMessage {
		if !p.OK {
			fail(service, p)
			return []json.RawMessage{}
		}
		var body struct {
			Entries []json.RawMessage `json:"entries"`
		}
		if json.Unmarshal(p.Data, &body) != nil {
			fail(service, failedPart(http.StatusBadGateway, "", "its answer could not be read"))
			return []json.RawMessage{}
		}
		for _, e := range body.Entries {
			var named map[string]any
			_ = json.Unmarshal(e, &named)
			if name, _ := named[field].(string); sourceOf(name) != "" {
				sources[sourceOf(name)] = true
			}
		}
		if body.Entries == nil {
			return []json.RawMessage{}
		}
		return body.Entries
	}
	a.Outbox = collect("publisher", outbox, "index")
	a.DeadLetters = collect("classifier", dlq, "index_name")

	holds := func(ctx context.Context, index string) bool {
		p := f.get(ctx, r, "index-manager", f.indexManager, "/api/v1/indices/"+url.PathEscape(index)+"/documents/"+url.PathEscape(id), true)
		if !p.OK && p.Status != http.StatusNotFound {
			fail("index-manager", p)
		}
		return p.OK
	}
	found := map[string]bool{}
	if len(sources) == 0 {
		raws := h.rawIndices(ctx, r, fail)
		held := make([]bool, len(raws))
		fns := make([]func(context.Context), len(raws))
		for i, raw := range raws {
			fns[i] = func(ctx context.Context) { held[i] = holds(ctx, raw) }
		}
		pooled(ctx, fns)
		for i, raw := range raws {
			if held[i] {
				sources[sourceOf(raw)] = true
				found[raw] = true
			}
		}
	}
	names := make([]string, 0, len(sources))
	for s := range sources {
		names = append(names, s)
	}
	sort.Strings(names)
	var checks []foundIndex // per source, raw then classified
	for _, s := range names {
		checks = append(checks, foundIndex{s + "_raw_content", "raw"}, foundIndex{s + "_classified_content", "classified"})
	}
	held := make([]bool, len(checks))
	var fns []func(context.Context)
	for i, c := range checks {
		if found[c.Index] {
			held[i] = true
			continue
		}
		fns = append(fns, func(ctx context.Context) { held[i] = holds(ctx, c.Index) })
	}
	pooled(ctx, fns)
	for i, c := range checks {
		if held[i] {
			a.Indices = append(a.Indices, c)
		}
	}
	for _, service := range []string{"publisher", "classifier", "index-manager"} {
		if msg, ok := failed[service]; ok {
			a.Failures = append(a.Failures, findFailure{service, msg})
		}
	}
	return a
}

// rawIndices lists the raw indices' names.
func (h *findHandler) rawIndices(ctx context.Context, r *http.Request, fail func(string, part)) []string {
	p := h.f.get(ctx, r, "index-manager", h.f.indexManager, "/api/v1/indices?index_type=raw_content", true)
	if !p.OK {
		fail("index-manager", p)
		return nil
	}
	var body struct {
		Indices []struct {
			Name string `json:"name"`
		} `json:"indices"`
	}
	if json.Unmarshal(p.Data, &body) != nil {
		fail("index-manager", failedPart(http.StatusBadGateway, "", "its index list could not be read"))
		return nil
	}
	var out []string
	for _, i := range body.Indices {
		if sourceOf(i.Name) != "" {
			out = append(out, i.Name)
		}
	}
	return out
}

// sourceOf is the source of a content index's name ("" for any other).
func sourceOf(index string) string {
	for _, suffix := range []string{"_raw_content", "_classified_content"} {
		if s, ok := strings.CutSuffix(index, suffix); ok && sourceName.MatchString(s) {
			return s
		}
	}
	return ""
}

// prioritiesHandler answers GET /api/sources/priorities?source=a&source=b:
// every named source's priority mark, read from the classifier's
// GET /api/v1/sources/{name}/priority a few at a time (the classifier has
// no route for all of them), so the Sources page makes one request for its
// priorities instead of one per source. A source the classifier did not
// answer for is in failures with what it said.
type prioritiesHandler struct{ f *fanout }

type prioritiesAnswer struct {
	Priorities map[string]json.RawMessage `json:"priorities"`
	Failures   map[string]partError       `json:"failures"`
}

func (h *prioritiesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sources := r.URL.Query()["source"]
	if len(sources) > prioritySourcesMax {
		writeError(w, http.StatusBadRequest, "too_many_sources", fmt.Sprintf("at most %d sources at once (got %d)", prioritySourcesMax, len(sources)))
		return
	}
	seen := map[string]bool{}
	var names []string
	for _, s := range sources {
		if !sourceName.MatchString(s) {
			writeError(w, http.StatusBadRequest, "invalid_source", fmt.Sprintf("source must be the prefix of a raw index: lowercase letters, digits, '_' and '-', "+
				"starting with a letter or digit, at most 200 characters (got %q)", s))
			return
		}
		if !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
	}
	parts := make([]part, len(names))
	fns := make([]func(context.Context), len(names))
	for i, s := range names {
		fns[i] = func(ctx context.Context) {
			parts[i] = h.f.get(ctx, r, "classifier", h.f.classifier, "/api/v1/sources/"+url.PathEscape(s)+"/priority", true)
		}
	}
	pooled(r.Context(), fns)
	a := prioritiesAnswer{Priorities: map[string]json.RawMessage{}, Failures: map[string]partError{}}
	for i, s := range names {
		if parts[i].OK {
			a.Priorities[s] = parts[i].Data
		} else {
			a.Failures[s] = *parts[i].Error
		}
	}
	writeJSON(w, http.StatusOK, a)
}
