package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The query endpoint accepts an allowlist of query types, each with an
// allowlist of options; anything else (script, script_score,
// function_score, terms_set, wildcard, regexp, more_like_this, nested,
// percolate, wrapper, terms lookups, ...) is refused with 400 naming it. The
// allowlist is documented in index-manager/README.md.
const (
	// maxQueryDepth bounds how deeply queries nest (a bool inside a bool
	// inside ...).
	maxQueryDepth = 20
	// maxQueryClauses bounds the number of queries in one request.
	maxQueryClauses = 1024
	// maxQueryValues bounds the values of one terms or ids query.
	maxQueryValues = 1024
	// maxHighlightFields bounds the fields of a highlight.
	maxHighlightFields = 50
)

// valueCheck checks one option's value; path names it in messages.
type valueCheck func(c *queryChecker, path string, v any) error

// queryShape is how a query type's body is laid out.
type queryShape int

const (
	// shapeOptions: {"type": {option: value, ...}} (bool, multi_match).
	shapeOptions queryShape = iota
	// shapeField: {"type": {"field": scalar | {option: value}}} (match,
	// term); a scalar is the short form of the option in short.
	shapeField
	// shapeFieldObject: {"type": {"field": {option: value}}} (range).
	shapeFieldObject
	// shapeFieldValues: {"type": {"field": [scalars], "boost": n}} (terms).
	shapeFieldValues
)

type querySpec struct {
	shape    queryShape
	short    string // the option a scalar stands for (shapeField)
	required []string
	opts     map[string]valueCheck
}

var (
	// fieldListPattern is a field name or pattern with an optional boost,
	// as multi_match and query_string take them ("title^2", "meta_*").
	fieldListPattern = regexp.MustCompile(`^[A-Za-z0-9_@*][A-Za-z0-9_.@*-]{0,254}(\^[0-9]{1,4}(\.[0-9]{1,4})?)?$`)
	// analyzerPattern is an analyzer name.
	analyzerPattern = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
)

// Value checks shared by the specs.
var (
	vScalar valueCheck = func(_ *queryChecker, path string, v any) error {
		switch v.(type) {
		case string, json.Number, bool:
			return nil
		}
		return invalid("%s must be a string, number or boolean", path)
	}
	vString valueCheck = func(_ *queryChecker, path string, v any) error {
		if _, ok := v.(string); !ok {
			return invalid("%s must be a string", path)
		}
		return nil
	}
	vBool valueCheck = func(_ *queryChecker, path string, v any) error {
		if _, ok := v.(bool); !ok {
			return invalid("%s must be true or false", path)
		}
		return nil
	}
	vNumber valueCheck = func(_ *queryChecker, path string, v any) error {
		n, ok := v.(json.Number)
		if !ok {
			return invalid("%s must be a number", path)
		}
		if _, err := n.Float64(); err != nil {
			return invalid("%s must be a number", path)
		}
		return nil
	}
	vStringOrNumber valueCheck = func(c *queryChecker, path string, v any) error {
		if _, ok := v.(string); ok {
			return nil
		}
		if vNumber(c, path, v) != nil {
			return invalid("%s must be a string or a number", path)
		}
		return nil
	}
	vAnalyzer valueCheck = func(_ *queryChecker, path string, v any) error {
		if s, ok := v.(string); !ok || !analyzerPattern.MatchString(s) {
			return invalid("%s must be an analyzer name", path)
		}
		return nil
	}
	vField valueCheck = func(_ *queryChecker, path string, v any) error {
		if s, ok := v.(string); !ok || !fieldPattern.MatchString(s) {
			return invalid("%s must be a field name", path)
		}
		return nil
	}
	vFieldPattern valueCheck = func(_ *queryChecker, path string, v any) error {
		if s, ok := v.(string); !ok || !fieldListPattern.MatchString(s) {
			return invalid("%s must be a field name or pattern", path)
		}
		return nil
	}
	vFieldList valueCheck = func(c *queryChecker, path string, v any) error {
		list, ok := v.([]any)
		if !ok || len(list) > 100 {
			return invalid("%s must be a list of at most 100 field names", path)
		}
		for i, f := range list {
			if err := vFieldPattern(c, fmt.Sprintf("%s[%d]", path, i), f); err != nil {
				return err
			}
		}
		return nil
	}
	// vFalse is an option that may only turn a costly feature off.
	vFalse valueCheck = func(_ *queryChecker, path string, v any) error {
		if b, ok := v.(bool); !ok || b {
			return invalid("%s may only be false", path)
		}
		return nil
	}
	vQueryStringText valueCheck = func(_ *queryChecker, path string, v any) error {
		text, ok := v.(string)
		if !ok {
			return invalid("%s must be a string", path)
		}
		return costlyQueryString(path, text)
	}
	vQuery valueCheck = func(c *queryChecker, path string, v any) error { return c.query(path, v) }
	// vQueries is a bool clause: one query or a list of them.
	vQueries valueCheck = func(c *queryChecker, path string, v any) error {
		list, ok := v.([]any)
		if !ok {
			return c.query(path, v)
		}
		for i, q := range list {
			if err := c.query(fmt.Sprintf("%s[%d]", path, i), q); err != nil {
				return err
			}
		}
		return nil
	}
)

func vInt(lo, hi int64) valueCheck {
	return func(_ *queryChecker, path string, v any) error {
		n, ok := v.(json.Number)
		if ok {
			i, err := strconv.ParseInt(n.String(), 10, 64)
			if err == nil && i >= lo && i <= hi {
				return nil
			}
		}
		return invalid("%s must be an integer from %d to %d", path, lo, hi)
	}
}

func vEnum(values ...string) valueCheck {
	return func(_ *queryChecker, path string, v any) error {
		s, ok := v.(string)
		for _, a := range values {
			if ok && strings.EqualFold(s, a) {
				return nil
			}
		}
		return invalid("%s must be one of %s", path, strings.Join(values, ", "))
	}
}

func vStrings(maxItems int) valueCheck {
	return func(_ *queryChecker, path string, v any) error {
		list, ok := v.([]any)
		if !ok || len(list) > maxItems {
			return invalid("%s must be a list of at most %d strings", path, maxItems)
		}
		for _, s := range list {
			if _, ok := s.(string); !ok {
				return invalid("%s must be a list of at most %d strings", path, maxItems)
			}
		}
		return nil
	}
}

func vScalars(maxItems int) valueCheck {
	return func(c *queryChecker, path string, v any) error {
		list, ok := v.([]any)
		if !ok || len(list) > maxItems {
			return invalid("%s must be a list of at most %d values (terms lookups are not allowed)", path, maxItems)
		}
		for i, s := range list {
			if err := vScalar(c, fmt.Sprintf("%s[%d]", path, i), s); err != nil {
				return err
			}
		}
		return nil
	}
}

// with returns common options (boost, _name) plus the given ones.
func with(opts map[string]valueCheck) map[string]valueCheck {
	out := map[string]valueCheck{"boost": vNumber, "_name": vString}
	for k, v := range opts {
		out[k] = v
	}
	return out
}

var (
	vOperator = vEnum("or", "and")
	vZeroTerm = vEnum("none", "all")
	vFuzz     = vStringOrNumber
	vMSM      = vStringOrNumber
)

// queryTypes is the allowlist of query types (filled in by init: bool and
// constant_score refer back to the query check).
var queryTypes map[string]querySpec

func init() { queryTypes = queryTypeSpecs() }

func queryTypeSpecs() map[string]querySpec {
	return map[string]querySpec{
		"match_all":  {shape: shapeOptions, opts: with(nil)},
		"match_none": {shape: shapeOptions, opts: with(nil)},
		"match": {shape: shapeField, short: "query", required: []string{"query"}, opts: with(map[string]valueCheck{
			"query": vScalar, "operator": vOperator, "minimum_should_match": vMSM, "fuzziness": vFuzz,
			"prefix_length": vInt(0, 100), "max_expansions": vInt(1, 100), "fuzzy_transpositions": vBool,
			"lenient": vBool, "zero_terms_query": vZeroTerm, "analyzer": vAnalyzer,
			"auto_generate_synonyms_phrase_query": vBool,
		})},
		"match_phrase": {shape: shapeField, short: "query", required: []string{"query"}, opts: with(map[string]valueCheck{
			"query": vScalar, "slop": vInt(0, 100), "analyzer": vAnalyzer, "zero_terms_query": vZeroTerm,
		})},
		"match_phrase_prefix": {shape: shapeField, short: "query", required: []string{"query"}, opts: with(map[string]valueCheck{
			"query": vScalar, "slop": vInt(0, 100), "analyzer": vAnalyzer, "zero_terms_query": vZeroTerm, "max_expansions": vInt(1, 100),
		})},
		"multi_match": {shape: shapeOptions, required: []string{"query"}, opts: with(map[string]valueCheck{
			"query": vScalar, "fields": vFieldList,
			"type":     vEnum("best_fields", "most_fields", "cross_fields", "phrase", "phrase_prefix", "bool_prefix"),
			"operator": vOperator, "minimum_should_match": vMSM, "fuzziness": vFuzz, "prefix_length": vInt(0, 100),
			"max_expansions": vInt(1, 100), "fuzzy_transpositions": vBool, "lenient": vBool, "zero_terms_query": vZeroTerm,
			"analyzer": vAnalyzer, "slop": vInt(0, 100), "tie_breaker": vNumber, "auto_generate_synonyms_phrase_query": vBool,
		})},
		"term": {shape: shapeField, short: "value", required: []string{"value"}, opts: with(map[string]valueCheck{
			"value": vScalar, "case_insensitive": vBool,
		})},
		"terms": {shape: shapeFieldValues, opts: with(nil)},
		"prefix": {shape: shapeField, short: "value", required: []string{"value"}, opts: with(map[string]valueCheck{
			"value": vString, "case_insensitive": vBool,
		})},
		"range": {shape: shapeFieldObject, opts: with(map[string]valueCheck{
			"gt": vScalar, "gte": vScalar, "lt": vScalar, "lte": vScalar, "format": vString, "time_zone": vString,
			"relation": vEnum("intersects", "contains", "within"),
		})},
		"exists": {shape: shapeOptions, required: []string{"field"}, opts: with(map[string]valueCheck{"field": vField})},
		"ids":    {shape: shapeOptions, required: []string{"values"}, opts: with(map[string]valueCheck{"values": vScalars(maxQueryValues)})},
		"bool": {shape: shapeOptions, opts: with(map[string]valueCheck{
			"must": vQueries, "filter": vQueries, "should": vQueries, "must_not": vQueries, "minimum_should_match": vMSM,
		})},
		"constant_score": {shape: shapeOptions, required: []string{"filter"}, opts: with(map[string]valueCheck{"filter": vQuery})},
		"query_string": {shape: shapeOptions, required: []string{"query"}, opts: with(map[string]valueCheck{
			"query": vQueryStringText, "default_field": vFieldPattern, "fields": vFieldList, "default_operator": vOperator,
			"analyzer": vAnalyzer, "quote_analyzer": vAnalyzer, "allow_leading_wildcard": vFalse, "analyze_wildcard": vBool,
			"fuzziness": vFuzz, "fuzzy_max_expansions": vInt(1, 100), "fuzzy_prefix_length": vInt(0, 100),
			"fuzzy_transpositions": vBool, "lenient": vBool, "minimum_should_match": vMSM, "phrase_slop": vInt(0, 100),
			"quote_field_suffix": vString, "time_zone": vString, "tie_breaker": vNumber,
			"type":                                vEnum("best_fields", "most_fields", "cross_fields", "phrase", "phrase_prefix", "bool_prefix"),
			"auto_generate_synonyms_phrase_query": vBool, "enable_position_increments": vBool,
		})},
		"simple_query_string": {shape: shapeOptions, required: []string{"query"}, opts: with(map[string]valueCheck{
			"query": vString, "fields": vFieldList, "default_operator": vOperator, "analyzer": vAnalyzer,
			"analyze_wildcard": vBool, "flags": vString, "fuzzy_max_expansions": vInt(1, 100), "fuzzy_prefix_length": vInt(0, 100),
			"fuzzy_transpositions": vBool, "lenient": vBool, "minimum_should_match": vMSM, "quote_field_suffix": vString,
			"auto_generate_synonyms_phrase_query": vBool,
		})},
	}
}

// AllowedQueryTypes lists the query types the query endpoint accepts.
func AllowedQueryTypes() []string { return sortedKeys(queryTypes) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// highlightOptions is the allowlist of highlight options, at the top level
// and (without fields) per field.
var highlightOptions map[string]valueCheck

func init() { highlightOptions = highlightOptionSpecs() }

func highlightOptionSpecs() map[string]valueCheck {
	return map[string]valueCheck{
		"pre_tags": vStrings(10), "post_tags": vStrings(10), "fragment_size": vInt(0, 10000),
		"number_of_fragments": vInt(0, 100), "no_match_size": vInt(0, 10000), "order": vEnum("none", "score"),
		"require_field_match": vBool, "encoder": vEnum("default", "html"), "type": vEnum("unified", "plain"),
		"fragmenter": vEnum("simple", "span"), "highlight_query": vQuery,
	}
}

// queryChecker walks one request's query and highlight.
type queryChecker struct {
	depth   int
	clauses int
}

// ValidateQuery checks a query against the allowlist of query types and
// options; nil or empty means match_all.
func ValidateQuery(q map[string]any) error {
	if len(q) == 0 {
		return nil
	}
	c := &queryChecker{}
	return c.query("query", q)
}

// ValidateHighlight checks a highlight against the allowlist of options;
// highlight_query is checked as a query.
func ValidateHighlight(h map[string]any) error {
	if len(h) == 0 {
		return nil
	}
	c := &queryChecker{}
	for _, k := range sortedKeys(h) {
		path := "highlight." + k
		if k == "fields" {
			if err := c.highlightFields(path, h[k]); err != nil {
				return err
			}
			continue
		}
		check, ok := highlightOptions[k]
		if !ok {
			return invalid("%s: highlight option %s is not allowed (allowed: fields, %s)", path, truncate(k), strings.Join(sortedKeys(highlightOptions), ", "))
		}
		if err := check(c, path, h[k]); err != nil {
			return err
		}
	}
	return nil
}

func (c *queryChecker) highlightFields(path string, v any) error {
	fields, ok := v.(map[string]any)
	if !ok || len(fields) > maxHighlightFields {
		return invalid("%s must be an object of at most %d fields", path, maxHighlightFields)
	}
	for _, f := range sortedKeys(fields) {
		fp := path + "." + f
		if !fieldListPattern.MatchString(f) || strings.Contains(f, "^") {
			return invalid("%s: %q is not a field name or pattern", path, truncate(f))
		}
		opts, ok := fields[f].(map[string]any)
		if !ok {
			return invalid("%s must be an object of highlight options", fp)
		}
		for _, k := range sortedKeys(opts) {
			check, ok := highlightOptions[k]
			if !ok {
				return invalid("%s.%s: highlight option %s is not allowed (allowed: %s)", fp, truncate(k), truncate(k), strings.Join(sortedKeys(highlightOptions), ", "))
			}
			if err := check(c, fp+"."+k, opts[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// query checks one query object: exactly one allowed type.
func (c *queryChecker) query(path string, v any) error {
	c.clauses++
	if c.clauses > maxQueryClauses {
		return invalid("%s: more than %d queries in one request", path, maxQueryClauses)
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxQueryDepth {
		return invalid("%s: queries are nested more than %d levels deep", path, maxQueryDepth)
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return invalid("%s must be an object with exactly one query type", path)
	}
	for typ, body := range m {
		spec, ok := queryTypes[typ]
		p := path + "." + truncate(typ)
		if !ok {
			return invalid("%s: query type %s is not allowed (allowed: %s)", p, truncate(typ), strings.Join(AllowedQueryTypes(), ", "))
		}
		obj, ok := body.(map[string]any)
		if !ok {
			return invalid("%s must be an object", p)
		}
		return c.queryBody(p, typ, spec, obj)
	}
	return nil
}

func (c *queryChecker) queryBody(path, typ string, spec querySpec, obj map[string]any) error {
	switch spec.shape {
	case shapeOptions:
		return c.options(path, typ, spec, obj)
	case shapeFieldValues:
		field := ""
		for _, k := range sortedKeys(obj) {
			if check, ok := spec.opts[k]; ok {
				if err := check(c, path+"."+k, obj[k]); err != nil {
					return err
				}
				continue
			}
			if field != "" {
				return invalid("%s must name exactly one field", path)
			}
			field = k
			if !fieldPattern.MatchString(k) {
				return invalid("%s: %q is not a field name", path, truncate(k))
			}
			if err := vScalars(maxQueryValues)(c, path+"."+k, obj[k]); err != nil {
				return err
			}
		}
		if field == "" {
			return invalid("%s must name exactly one field", path)
		}
		return nil
	default: // shapeField, shapeFieldObject
		if len(obj) != 1 {
			return invalid("%s must name exactly one field", path)
		}
		for field, v := range obj {
			if !fieldPattern.MatchString(field) {
				return invalid("%s: %q is not a field name", path, truncate(field))
			}
			fp := path + "." + field
			if opts, ok := v.(map[string]any); ok {
				return c.options(fp, typ, spec, opts)
			}
			if spec.shape == shapeFieldObject {
				return invalid("%s must be an object", fp)
			}
			return spec.opts[spec.short](c, fp, v)
		}
	}
	return nil
}

func (c *queryChecker) options(path, typ string, spec querySpec, obj map[string]any) error {
	for _, k := range sortedKeys(obj) {
		check, ok := spec.opts[k]
		if !ok {
			return invalid("%s.%s: option %s is not allowed in %s (allowed: %s)", path, truncate(k), truncate(k), typ, strings.Join(sortedKeys(spec.opts), ", "))
		}
		if err := check(c, path+"."+k, obj[k]); err != nil {
			return err
		}
	}
	for _, r := range spec.required {
		if _, ok := obj[r]; !ok {
			return invalid("%s: %s is required", path, r)
		}
	}
	return nil
}

// costlyQueryString refuses the parts of query_string syntax whose cost
// grows with the index's terms rather than with the query: a regular
// expression (/.../) and a term that starts with a wildcard (*ing, ?ar),
// which Elasticsearch runs by walking every term of the field. Both can
// keep a node's search threads busy for seconds, so that the 429s they
// cause reach everyone else's searches. Quoted phrases and escaped
// characters are literal; a lone * (match all, an open range end) is
// cheap and allowed. The handler also sends allow_leading_wildcard false,
// so a form this scan misses is refused by Elasticsearch.
func costlyQueryString(path, text string) error {
	inQuotes, termStart := false, true
	for i := 0; i < len(text); i++ {
		ch := text[i]
		switch {
		case ch == '\\':
			i++ // the next character is literal
			termStart = false
			continue
		case ch == '"':
			inQuotes = !inQuotes
		case inQuotes:
		case ch == '/':
			return invalid("%s: regular expressions (/.../) are not allowed; escape a literal slash as \\/ or put it in quotes", path)
		case (ch == '*' || ch == '?') && termStart && i+1 < len(text) && isTermChar(text[i+1]):
			return invalid("%s: a term may not start with a wildcard (%s); put the wildcard after its first characters", path, truncate(text[i:min(len(text), i+16)]))
		}
		termStart = !inQuotes && strings.IndexByte(" \t\n\r(:+-!~^[{", ch) >= 0
	}
	return nil
}

// isTermChar reports whether ch continues a query_string term.
func isTermChar(ch byte) bool {
	return ch == '*' || ch == '?' || ch == '_' || ch >= 0x80 ||
		('0' <= ch && ch <= '9') || ('a' <= ch && ch <= 'z') || ('A' <= ch && ch <= 'Z')
}

// disableLeadingWildcards sets allow_leading_wildcard false in every
// query_string of q (Elasticsearch's default is true).
func disableLeadingWildcards(q any) {
	switch t := q.(type) {
	case map[string]any:
		for k, v := range t {
			if body, ok := v.(map[string]any); ok && k == "query_string" {
				body["allow_leading_wildcard"] = false
			}
			disableLeadingWildcards(v)
		}
	case []any:
		for _, v := range t {
			disableLeadingWildcards(v)
		}
	}
}
