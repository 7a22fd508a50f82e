package api

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
)

// Index creation allowlist. A create request may set only these settings,
// within these bounds; everything else (pipelines, blocks, hidden,
// allocation filters, similarity, analysis, ...) is refused with 400 naming
// the setting. The content templates set shards and refresh_interval, and
// replicas by contentindex.AutoExpandReplicas.
const (
	minShards   = 1
	maxShards   = 8
	minReplicas = 0
	maxReplicas = 3
	// minRefreshInterval and maxRefreshInterval bound refresh_interval;
	// "-1" (never refresh) is refused, since the classifier would never
	// see new documents.
	minRefreshInterval = time.Second
	maxRefreshInterval = 5 * time.Minute
	// maxSettingsDepth bounds the nesting of the settings object (the
	// longest allowed setting, index.number_of_replicas, has two levels).
	maxSettingsDepth = 8
)

// AllowedSettings are the settings a create request may give, in their
// canonical name. The forms "number_of_shards", "index.number_of_shards"
// and {"index":{"number_of_shards":...}} are all accepted.
var AllowedSettings = []string{"index.number_of_replicas", "index.number_of_shards", "index.refresh_interval"}

// refreshPattern is a time value with a unit, as Elasticsearch writes it.
var refreshPattern = regexp.MustCompile(`^([0-9]{1,7})(ms|s|m)$`)

// ValidateSettings checks a create request's settings against the
// allowlist and returns them in canonical form merged over the project's
// defaults, ready to send. Any setting not in AllowedSettings, any value of
// an unexpected shape (an object where a number belongs, an array, an
// object inside an array) and any value out of bounds is refused with a
// message naming the setting.
func ValidateSettings(settings map[string]any) (map[string]any, error) {
	flat := map[string]any{}
	if err := flattenSettings("", settings, flat, 0); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(flat))
	for k := range flat {
		names = append(names, k)
	}
	sort.Strings(names)
	out := contentindex.Settings()
	for _, name := range names {
		v := flat[name]
		switch name {
		case "index.number_of_shards":
			n, err := boundedInt(name, v, minShards, maxShards)
			if err != nil {
				return nil, err
			}
			out["number_of_shards"] = n
		case "index.number_of_replicas":
			n, err := boundedInt(name, v, minReplicas, maxReplicas)
			if err != nil {
				return nil, err
			}
			out["number_of_replicas"] = n
			// An explicit count replaces the content indices' automatic
			// one (contentindex.AutoExpandReplicas), which would else
			// override it.
			out["auto_expand_replicas"] = "false"
		case "index.refresh_interval":
			s, err := refreshInterval(v)
			if err != nil {
				return nil, err
			}
			out["refresh_interval"] = s
		default:
			return nil, invalid("settings: %s is not allowed; a new index may set only %s", truncate(name), strings.Join(AllowedSettings, ", "))
		}
	}
	return out, nil
}

// flattenSettings turns nested settings objects into dotted names with the
// "index." prefix, as Elasticsearch does.
func flattenSettings(prefix string, m map[string]any, out map[string]any, depth int) error {
	if depth > maxSettingsDepth {
		return invalid("settings: %s is nested too deeply", truncate(canonicalSetting(prefix)))
	}
	for k, v := range m {
		if k == "" {
			return invalid("settings: empty setting name")
		}
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			if err := flattenSettings(name, sub, out, depth+1); err != nil {
				return err
			}
			continue
		}
		canon := canonicalSetting(name)
		if _, dup := out[canon]; dup {
			return invalid("settings: %s is given twice", truncate(canon))
		}
		out[canon] = v
	}
	if len(m) == 0 && prefix != "" {
		// {"index": {}} sets nothing; {"index": {"blocks": {}}} names a
		// setting group that is not allowed either way.
		if canon := canonicalSetting(prefix); canon != "index" {
			out[canon] = m
		}
	}
	return nil
}

func canonicalSetting(name string) string {
	if name == "index" || strings.HasPrefix(name, "index.") {
		return name
	}
	return "index." + name
}

// boundedInt accepts a JSON integer or a decimal string (Elasticsearch
// accepts both) within [lo, hi].
func boundedInt(name string, v any, lo, hi int) (int, error) {
	var n int64
	var err error
	switch t := v.(type) {
	case json.Number:
		n, err = strconv.ParseInt(t.String(), 10, 64)
	case float64:
		if t != math.Trunc(t) {
			err = fmt.Errorf("not an integer")
		}
		n = int64(t)
	case string:
		n, err = strconv.ParseInt(t, 10, 64)
	default:
		err = fmt.Errorf("wrong type")
	}
	if err != nil {
		return 0, invalid("settings: %s must be an integer from %d to %d", name, lo, hi)
	}
	if n < int64(lo) || n > int64(hi) {
		return 0, invalid("settings: %s must be from %d to %d (got %d)", name, lo, hi, n)
	}
	return int(n), nil
}

func refreshInterval(v any) (string, error) {
	const name = "index.refresh_interval"
	s, ok := v.(string)
	m := refreshPattern.FindStringSubmatch(s)
	if !ok || m == nil {
		return "", invalid("settings: %s must be a time such as \"1s\", \"500ms\" or \"1m\", from %s to %s", name, minRefreshInterval, maxRefreshInterval)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute}[m[2]]
	if d := time.Duration(n) * unit; d < minRefreshInterval || d > maxRefreshInterval {
		return "", invalid("settings: %s must be from %s to %s (got %s)", name, minRefreshInterval, maxRefreshInterval, s)
	}
	return s, nil
}

// ValidateMappings decides what a create request's mappings may be.
// Every index the API can create is a content index (ValidateIndexName),
// and content indices always get the shipped strict mapping of their type:
// the classifier and the publisher depend on it (crawled_at as a date,
// classification_status as a keyword, dynamic strict). A request that
// gives mappings is therefore refused rather than silently changed.
func ValidateMappings(name string, mappings map[string]any) (map[string]any, error) {
	typ := contentindex.TypeOf(name)
	if mappings != nil {
		return nil, invalid("mappings: %s is a %s index and always gets the shipped mapping of its type; omit mappings", truncate(name), typ)
	}
	return contentindex.MappingFor(typ), nil
}
