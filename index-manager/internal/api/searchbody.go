package api

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// Aggregations and search_after of POST /_query: the parts of
// Elasticsearch's search body beyond query, sort, _source and highlight
// that an operator console needs (counts per value, per day, and deep
// paging). Each is allowlisted like the query: only the aggregation types
// and options below, bounded in number, depth and bucket count.

// Bounds of aggs.
const (
	aggsMax        = 20  // aggregations in one request, sub-aggregations included
	aggsDepthMax   = 3   // levels of sub-aggregations
	aggsTermsMax   = 100 // terms size
	aggsRangesMax  = 100 // ranges of a range aggregation
	searchAfterMax = 11  // values: at most 10 sort fields plus the id tie-breaker
)

var (
	aggNamePattern  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	intervalPattern = regexp.MustCompile(`^[1-9][0-9]{0,5}(ms|s|m|h|d)$`)
)

type aggSpec struct {
	options map[string]valueCheck
	// bucket aggregations may hold sub-aggregations.
	bucket bool
}

var (
	vMinDocCount            = vInt(0, 1_000_000)
	vTermsOrder  valueCheck = func(c *queryChecker, path string, v any) error {
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return invalid("%s must be one {\"_count\"|\"_key\": \"asc\"|\"desc\"}", path)
		}
		for k, d := range m {
			if k != "_count" && k != "_key" {
				return invalid("%s may order by _count or _key only", path)
			}
			return vEnum("asc", "desc")(c, path+"."+k, d)
		}
		return nil
	}
	vCalendarInterval            = vEnum("minute", "1m", "hour", "1h", "day", "1d", "week", "1w", "month", "1M", "quarter", "1q", "year", "1y")
	vFixedInterval    valueCheck = func(_ *queryChecker, path string, v any) error {
		if s, ok := v.(string); !ok || !intervalPattern.MatchString(s) {
			return invalid("%s must be a duration such as 30m or 1d", path)
		}
		return nil
	}
	vPositive valueCheck = func(_ *queryChecker, path string, v any) error {
		n, ok := v.(json.Number)
		if f, err := n.Float64(); !ok || err != nil || f <= 0 {
			return invalid("%s must be a positive number", path)
		}
		return nil
	}
	vShortString valueCheck = func(_ *queryChecker, path string, v any) error {
		if s, ok := v.(string); !ok || len(s) > 64 {
			return invalid("%s must be a string of at most 64 bytes", path)
		}
		return nil
	}
	vRanges valueCheck = func(c *queryChecker, path string, v any) error {
		list, ok := v.([]any)
		if !ok || len(list) == 0 || len(list) > aggsRangesMax {
			return invalid("%s must be a list of 1 to %d ranges", path, aggsRangesMax)
		}
		for i, r := range list {
			m, ok := r.(map[string]any)
			p := fmt.Sprintf("%s[%d]", path, i)
			if !ok {
				return invalid("%s must be an object with from, to and key", p)
			}
			for k, x := range m {
				switch k {
				case "from", "to":
					if err := vStringOrNumber(c, p+"."+k, x); err != nil {
						return err
					}
				case "key":
					if err := vShortString(c, p+"."+k, x); err != nil {
						return err
					}
				default:
					return invalid("%s.%s is not allowed (from, to, key)", p, k)
				}
			}
		}
		return nil
	}
)

func metricAgg(extra map[string]valueCheck) aggSpec {
	o := map[string]valueCheck{"field": vField, "missing": vScalar}
	for k, v := range extra {
		o[k] = v
	}
	return aggSpec{options: o}
}

var aggSpecs = map[string]aggSpec{
	"terms": {bucket: true, options: map[string]valueCheck{
		"field": vField, "size": vInt(1, aggsTermsMax), "min_doc_count": vMinDocCount, "order": vTermsOrder, "missing": vScalar,
	}},
	"date_histogram": {bucket: true, options: map[string]valueCheck{
		"field": vField, "calendar_interval": vCalendarInterval, "fixed_interval": vFixedInterval,
		"min_doc_count": vMinDocCount, "format": vShortString, "time_zone": vShortString,
	}},
	"histogram":   {bucket: true, options: map[string]valueCheck{"field": vField, "interval": vPositive, "min_doc_count": vMinDocCount}},
	"range":       {bucket: true, options: map[string]valueCheck{"field": vField, "ranges": vRanges, "keyed": vBool}},
	"missing":     {bucket: true, options: map[string]valueCheck{"field": vField}},
	"filter":      {bucket: true},
	"avg":         metricAgg(nil),
	"sum":         metricAgg(nil),
	"min":         metricAgg(nil),
	"max":         metricAgg(nil),
	"stats":       metricAgg(nil),
	"value_count": metricAgg(nil),
	"cardinality": metricAgg(map[string]valueCheck{"precision_threshold": vInt(0, 40_000)}),
}

type aggChecker struct {
	count int
	query queryChecker
}

// ValidateAggs checks aggs against the allowlist: the aggregation types
// above with their options, a filter aggregation holding an allowlisted
// query, at most 20 aggregations, 3 levels deep.
func ValidateAggs(aggs map[string]any) error {
	if len(aggs) == 0 {
		return nil
	}
	c := &aggChecker{}
	return c.aggs("aggs", aggs, 1)
}

func (c *aggChecker) aggs(path string, aggs map[string]any, depth int) error {
	if depth > aggsDepthMax {
		return invalid("%s: aggregations nest at most %d deep", path, aggsDepthMax)
	}
	for _, name := range sortedKeys(aggs) {
		p := path + "." + name
		if !aggNamePattern.MatchString(name) {
			return invalid("%s: an aggregation name is letters, digits, _ and - (at most 64)", path)
		}
		c.count++
		if c.count > aggsMax {
			return invalid("at most %d aggregations", aggsMax)
		}
		body, ok := aggs[name].(map[string]any)
		if !ok {
			return invalid("%s must be an object", p)
		}
		var typ string
		var sub map[string]any
		for _, k := range sortedKeys(body) {
			switch k {
			case "aggs", "aggregations":
				if sub != nil {
					return invalid("%s: give aggs or aggregations, not both", p)
				}
				if sub, ok = body[k].(map[string]any); !ok {
					return invalid("%s.%s must be an object", p, k)
				}
			case "meta":
				return invalid("%s.meta is not allowed", p)
			default:
				if typ != "" {
					return invalid("%s holds two aggregation types (%s, %s)", p, typ, k)
				}
				typ = k
			}
		}
		spec, known := aggSpecs[typ]
		switch {
		case typ == "":
			return invalid("%s has no aggregation type", p)
		case !known:
			return invalid("%s.%s: aggregation type %s is not allowed (terms, date_histogram, histogram, range, missing, filter, avg, sum, min, max, stats, value_count, cardinality)", p, typ, typ)
		}
		if err := c.options(p+"."+typ, typ, spec, body[typ]); err != nil {
			return err
		}
		if sub != nil {
			if !spec.bucket {
				return invalid("%s: a %s aggregation takes no sub-aggregations", p, typ)
			}
			if err := c.aggs(p+".aggs", sub, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *aggChecker) options(path, typ string, spec aggSpec, v any) error {
	if typ == "filter" {
		q, ok := v.(map[string]any)
		if !ok {
			return invalid("%s must be a query", path)
		}
		return c.query.query(path, q)
	}
	opts, ok := v.(map[string]any)
	if !ok {
		return invalid("%s must be an object", path)
	}
	if _, ok := opts["field"]; !ok {
		return invalid("%s.field is required", path)
	}
	for _, k := range sortedKeys(opts) {
		check, ok := spec.options[k]
		if !ok {
			return invalid("%s.%s is not allowed (scripts, runtime fields and other options are refused)", path, k)
		}
		if err := check(&c.query, path+"."+k, opts[k]); err != nil {
			return err
		}
	}
	if typ == "date_histogram" {
		_, cal := opts["calendar_interval"]
		_, fixed := opts["fixed_interval"]
		if cal == fixed {
			return invalid("%s needs exactly one of calendar_interval and fixed_interval", path)
		}
	}
	if typ == "histogram" {
		if _, ok := opts["interval"]; !ok {
			return invalid("%s.interval is required", path)
		}
	}
	if typ == "range" {
		if _, ok := opts["ranges"]; !ok {
			return invalid("%s.ranges is required", path)
		}
	}
	return nil
}

// ValidateSearchAfter checks search_after: one scalar (or null) per sort
// field, with from 0, so a caller pages at any depth without from.
func ValidateSearchAfter(after []any, sort []SortField, from int) error {
	if after == nil {
		return nil
	}
	switch {
	case len(sort) == 0:
		return invalid("search_after needs a sort")
	case len(after) != len(sort) || len(after) > searchAfterMax:
		return invalid("search_after must hold one value per sort field (%d, got %d)", len(sort), len(after))
	case from != 0:
		return invalid("from must be 0 with search_after")
	}
	for i, v := range after {
		switch v.(type) {
		case string, json.Number, bool, nil:
		default:
			return invalid("search_after[%d] must be a string, number, boolean or null", i)
		}
	}
	return nil
}
