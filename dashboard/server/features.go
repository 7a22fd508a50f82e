package server

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// Feature names a part of the dashboard an operator can turn off with
// DASHBOARD_FEATURES. The views hide a disabled feature (its navigation
// entry and buttons; its route says it is turned off) and the server
// refuses the API routes that only it uses with 403 feature_disabled: the
// changes of a feature inside a view, every method of a whole view's own
// routes (rules, index_manager), so that turning a view off is not only
// hiding it.
type Feature string

// The dashboard's features. Every one is on unless DASHBOARD_FEATURES turns
// it off.
const (
	// FeatureLiveTail is the Live Tail view and GET /api/live.
	FeatureLiveTail Feature = "live_tail"
	// FeatureReprocess is the Sources view's reprocess action and the
	// classifier's reprocess routes other than reads.
	FeatureReprocess Feature = "reprocess"
	// FeatureQueryExplorer is the Query Explorer view. Its API route (the
	// index-manager's _query) also serves other views, so it stays open.
	FeatureQueryExplorer Feature = "query_explorer"
	// FeatureExports is the CSV/JSON exports of lists (built in the
	// browser from the list routes, which other views use: views only).
	FeatureExports Feature = "exports"
	// FeatureRulesEdit is creating, editing, enabling, disabling and
	// deleting rules (the dry run and the playground stay).
	FeatureRulesEdit Feature = "rules_edit"
	// FeatureLabelling is the Labelling view: labelling documents, deleting
	// labels and training a model from them (the classifier's POST and
	// DELETE under /api/v1/labels and POST /api/v1/models/train?from=labels).
	// The reads stay open, as every feature's.
	FeatureLabelling Feature = "labelling"
	// FeatureRules is the Rules view (spec phase 5: the rules management UI
	// behind a flag). Off, every route under the classifier's /api/v1/rules
	// is refused, reads, the dry run and the playground included: the view
	// is their only user in the dashboard, and rules_edit is moot.
	FeatureRules Feature = "rules"
	// FeatureIndexManager is the Index Manager view, its Query Explorer tab
	// included (spec phase 5). Off, the index-manager routes only that view
	// uses are refused whatever the method: creating, deleting, refreshing
	// and force-merging indices, an index's details, mappings, stats and
	// document pages, aliases and tasks. The reads other views use stay
	// open: the index list (Sources, Outbox, Find), one document (Document,
	// Find), _query (Sources' counts), the content count (Overview), the
	// audit log and sign-in.
	FeatureIndexManager Feature = "index_manager"
)

// Features lists every feature, in the order /api/features names them.
func Features() []Feature {
	return []Feature{FeatureLiveTail, FeatureReprocess, FeatureQueryExplorer, FeatureExports, FeatureRulesEdit, FeatureLabelling, FeatureRules, FeatureIndexManager}
}

// FeatureSet says which features are on. The zero value has every feature
// on.
type FeatureSet struct {
	off map[Feature]bool
}

// Enabled reports whether f is on.
func (s FeatureSet) Enabled(f Feature) bool { return !s.off[f] }

// Disabled returns the features turned off, sorted.
func (s FeatureSet) Disabled() []string {
	var out []string
	for f, off := range s.off {
		if off {
			out = append(out, string(f))
		}
	}
	sort.Strings(out)
	return out
}

// String is the set as DASHBOARD_FEATURES would write it, for the start-up
// log ("all on" when nothing is off).
func (s FeatureSet) String() string {
	d := s.Disabled()
	if len(d) == 0 {
		return "all on"
	}
	return strings.Join(d, "=off,") + "=off"
}

// ParseFeatures reads DASHBOARD_FEATURES: a comma-separated list of
// name=on|off (also true/false, 1/0, yes/no), for example
// "live_tail=off,exports=off". Features not named stay on. An unknown name
// or value is an error naming it.
func ParseFeatures(raw string) (FeatureSet, error) {
	s := FeatureSet{off: map[Feature]bool{}}
	for _, part := range strings.Split(raw, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok {
			return FeatureSet{}, fmt.Errorf("DASHBOARD_FEATURES: %q: want name=on or name=off", part)
		}
		if !slices.Contains(Features(), Feature(name)) {
			return FeatureSet{}, fmt.Errorf("DASHBOARD_FEATURES: unknown feature %q (known: %s)", name, featureNames())
		}
		switch strings.ToLower(strings.TrimSpace(value)) {
		case "on", "true", "1", "yes":
			s.off[Feature(name)] = false
		case "off", "false", "0", "no":
			s.off[Feature(name)] = true
		default:
			return FeatureSet{}, fmt.Errorf("DASHBOARD_FEATURES: %s: must be on or off (got %q)", name, value)
		}
	}
	return s, nil
}

func featureNames() string {
	names := make([]string, 0, len(Features()))
	for _, f := range Features() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}

// featuresHandler answers GET /api/features: every feature with whether it
// is on. It needs no token: it is configuration (as /config.json), read
// before sign-in.
func featuresHandler(s FeatureSet) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed: this route is read-only (GET)")
			return
		}
		out := map[string]bool{}
		for _, f := range Features() {
			out[string(f)] = s.Enabled(f)
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, map[string]any{"features": out, "disabled": nonNil(s.Disabled())})
	})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// featureRoute is an API route behind the proxy that only one feature
// uses: every method but GET and HEAD (and the reads sent by POST) on a path
// pattern after the proxy's prefix ("*" is one segment), every method
// when reads is set, and, when query is set ("name=value"), only with that
// query parameter (the first of its name, as the services read it).
type featureRoute struct {
	feature Feature
	prefix  string
	pattern string
	query   string
	reads   bool
}

// featureRoutes are the proxied routes a disabled feature closes. Reads
// stay open (other views show reprocess history), the reads sent by POST
// (the rules dry run, the playground) too, except for a whole view's own
// routes (reads set), which no other view calls.
var featureRoutes = []featureRoute{
	{FeatureReprocess, "/api/classifier", "/api/v1/sources/*/reprocess", "", false},
	{FeatureReprocess, "/api/classifier", "/api/v1/sources/*/reprocess/*", "", false},
	{FeatureReprocess, "/api/classifier", "/api/v1/sources/*/reprocess/*/cancel", "", false},
	{FeatureRulesEdit, "/api/classifier", "/api/v1/rules", "", false},
	{FeatureRulesEdit, "/api/classifier", "/api/v1/rules/*", "", false},
	{FeatureRulesEdit, "/api/classifier", "/api/v1/rules/*/enable", "", false},
	{FeatureRulesEdit, "/api/classifier", "/api/v1/rules/*/disable", "", false},
	{FeatureLabelling, "/api/classifier", "/api/v1/labels", "", false},
	{FeatureLabelling, "/api/classifier", "/api/v1/labels/*", "", false},
	// Training on a body stays: only training on the stored labels is the view's.
	{FeatureLabelling, "/api/classifier", "/api/v1/models/train", "from=labels", false},
	// The Rules view: every rules route, whatever the method.
	{FeatureRules, "/api/classifier", "/api/v1/rules", "", true},
	{FeatureRules, "/api/classifier", "/api/v1/rules/*", "", true},
	{FeatureRules, "/api/classifier", "/api/v1/rules/*/enable", "", true},
	{FeatureRules, "/api/classifier", "/api/v1/rules/*/disable", "", true},
	// The Index Manager view. GET /api/v1/indices (the list) serves other
	// views; creating an index (POST on it) is the view's.
	{FeatureIndexManager, "/api/index-manager", "/api/v1/indices", "", false},
	{FeatureIndexManager, "/api/index-manager", "/api/v1/indices/*", "", true},
	{FeatureIndexManager, "/api/index-manager", "/api/v1/indices/*/mappings", "", true},
	{FeatureIndexManager, "/api/index-manager", "/api/v1/indices/*/stats", "", true},
	{FeatureIndexManager, "/api/index-manager", "/api/v1/indices/*/documents", "", true},
	{FeatureIndexManager, "/api/index-manager", "/api/v1/indices/*/_refresh", "", true},
	{FeatureIndexManager, "/api/index-manager", "/api/v1/indices/*/_forcemerge", "", true},
	{FeatureIndexManager, "/api/index-manager", "/api/v1/indices/*/aliases/*", "", true},
	{FeatureIndexManager, "/api/index-manager", "/api/v1/aliases", "", true},
	{FeatureIndexManager, "/api/index-manager", "/api/v1/tasks/*", "", true},
}

// featureGate refuses with 403 feature_disabled, naming the flag, a
// request to the API behind prefix that changes something a disabled
// feature owns.
func featureGate(prefix string, s FeatureSet, next http.Handler) http.Handler {
	var routes []featureRoute
	for _, fr := range featureRoutes {
		if fr.prefix == prefix && !s.Enabled(fr.feature) {
			routes = append(routes, fr)
		}
	}
	if len(routes) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		read := r.Method == http.MethodGet || r.Method == http.MethodHead || (r.Method == http.MethodPost && readByPost(prefix, r))
		path := strings.TrimPrefix(r.URL.EscapedPath(), prefix)
		for _, fr := range routes {
			if (fr.reads || !read) && matchPath(fr.pattern, path) && fr.matchQuery(r) {
				featureDisabled(w, fr.feature)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// matchQuery reports whether r carries the route's query parameter (always
// when the route names none).
func (fr featureRoute) matchQuery(r *http.Request) bool {
	if fr.query == "" {
		return true
	}
	name, value, _ := strings.Cut(fr.query, "=")
	return r.URL.Query().Get(name) == value
}

// featureDisabled answers 403 naming the flag that turned f off.
func featureDisabled(w http.ResponseWriter, f Feature) {
	writeError(w, http.StatusForbidden, "feature_disabled",
		fmt.Sprintf("%s is turned off by DASHBOARD_FEATURES (%s=off)", f, f))
}
