package api

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/north-cloud/infrastructure/contentindex"
)

// Safety limits. Elasticsearch's own ceilings are higher; these keep one
// API call cheap and bounded.
const (
	// maxIndexNameBytes is Elasticsearch's limit on index names.
	maxIndexNameBytes = 255
	// maxDocIDBytes is Elasticsearch's limit on document ids.
	maxDocIDBytes = 512
	// deleteConfirmThreshold is the document count from which a delete
	// needs ?confirm=true.
	deleteConfirmThreshold int64 = 1000
	// maxPageSize caps size on the documents and query endpoints.
	maxPageSize = 100
	// defaultPageSize is the size when the request gives none.
	defaultPageSize = 10
	// maxResultWindow caps from+size, Elasticsearch's index.max_result_window
	// default; deeper pages go through the documents cursor (search_after).
	maxResultWindow = 10000
)

// errInvalid marks a request refused by a safety rule: the API answers 400
// with the message.
var errInvalid = errors.New("invalid request")

// errProtected marks an index an operator has protected: 403.
var errProtected = errors.New("protected index")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalid, fmt.Sprintf(format, args...))
}

// DefaultProtectedIndices cannot be created, deleted or refreshed whatever
// the configuration. They start with '.', which ValidateIndexName refuses
// anyway; listing them keeps the rule explicit if the name rules change.
var DefaultProtectedIndices = []string{".kibana", ".security", ".async-search", ".tasks", ".geoip_databases"}

// ValidateIndexName accepts only a concrete content index name:
// {source}_raw_content or {source}_classified_content, where source is
// lowercase letters, digits, '_' and '-' starting with a letter or digit.
// It names the first rule a hostile or mistaken name breaks: system
// indices, wildcards, lists, _all, path tricks, case and length.
func ValidateIndexName(name string) error {
	switch {
	case name == "":
		return invalid("index name is required")
	case len(name) > maxIndexNameBytes:
		return invalid("index name must be at most %d bytes (got %d)", maxIndexNameBytes, len(name))
	case !utf8.ValidString(name):
		return invalid("index name must be valid UTF-8")
	case strings.HasPrefix(name, "."):
		return invalid("system indices (starting with .) cannot be managed")
	case strings.ContainsAny(name, "*?"):
		return invalid("index name must not contain wildcards")
	case strings.Contains(name, ","):
		return invalid("index name must name one index (no commas)")
	case name == "_all" || strings.HasPrefix(name, "_"):
		return invalid("index name must not start with _ (_all and API endpoints are refused)")
	case strings.ContainsAny(name, `/\#:`) || strings.Contains(name, ".."):
		return invalid("index name must not contain path characters")
	case strings.ToLower(name) != name:
		return invalid("index name must be lowercase")
	}
	source, ok := strings.CutSuffix(name, contentindex.RawSuffix)
	if !ok {
		source, ok = strings.CutSuffix(name, contentindex.ClassifiedSuffix)
	}
	if !ok {
		return invalid("index name must match pattern *%s or *%s", contentindex.RawSuffix, contentindex.ClassifiedSuffix)
	}
	if !contentindex.ValidSource(source) {
		return invalid("index name must be {source}%s or {source}%s where source is lowercase letters, digits, _ and -, starting with a letter or digit",
			contentindex.RawSuffix, contentindex.ClassifiedSuffix)
	}
	return nil
}

// prefixPattern is what the list endpoint accepts as a name prefix: it is
// sent to Elasticsearch followed by '*', so it must hold no pattern syntax.
var prefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,199}$`)

// ValidatePrefix accepts an optional list filter.
func ValidatePrefix(prefix string) error {
	if prefix != "" && !prefixPattern.MatchString(prefix) {
		return invalid("prefix must be lowercase letters, digits, _ and -, starting with a letter or digit")
	}
	return nil
}

// ValidateDocumentID accepts ids Elasticsearch could hold.
func ValidateDocumentID(id string) error {
	switch {
	case id == "":
		return invalid("document id is required")
	case len(id) > maxDocIDBytes:
		return invalid("document id must be at most %d bytes", maxDocIDBytes)
	case !utf8.ValidString(id):
		return invalid("document id must be valid UTF-8")
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return invalid("document id must not contain control characters")
		}
	}
	return nil
}

// CanDeleteIndex checks the delete rules that need the document count; a
// negative count (unknown, as for a closed index) needs confirmation too.
func CanDeleteIndex(name string, docCount int64, confirmed bool) error {
	if err := ValidateIndexName(name); err != nil {
		return err
	}
	if docCount < 0 && !confirmed {
		return fmt.Errorf("%w: the document count of %s is unknown (closed index); add ?confirm=true to delete it", errConfirm, name)
	}
	if docCount >= deleteConfirmThreshold && !confirmed {
		return fmt.Errorf("%w: index %s has %d documents; add ?confirm=true to delete it", errConfirm, name, docCount)
	}
	return nil
}

// errConfirm marks a delete that needs ?confirm=true.
var errConfirm = errors.New("confirmation required")

// fieldPattern accepts a field name or (with '*') a field pattern, with no
// room for scripts or JSON.
var (
	fieldPattern   = regexp.MustCompile(`^[A-Za-z0-9_@][A-Za-z0-9_.@-]{0,254}$`)
	sourcePatternF = regexp.MustCompile(`^[A-Za-z0-9_@*][A-Za-z0-9_.@*-]{0,254}$`)
)

// ValidateSort checks sort fields and orders.
func ValidateSort(sort []SortField) error {
	if len(sort) > 10 {
		return invalid("at most 10 sort fields")
	}
	for _, s := range sort {
		if !fieldPattern.MatchString(s.Field) || (strings.HasPrefix(s.Field, "_") && s.Field != "_score" && s.Field != "_doc") {
			return invalid("sort field %q is not a field name", truncate(s.Field))
		}
		if s.Order != "" && s.Order != "asc" && s.Order != "desc" {
			return invalid("sort order must be asc or desc (got %q)", truncate(s.Order))
		}
	}
	return nil
}

// ValidateSourceFields checks the _source field list.
func ValidateSourceFields(fields []string) error {
	if len(fields) > 100 {
		return invalid("at most 100 _source fields")
	}
	for _, f := range fields {
		if !sourcePatternF.MatchString(f) {
			return invalid("_source field %q is not a field name or pattern", truncate(f))
		}
	}
	return nil
}

func truncate(s string) string {
	const maxLen = 64
	if len(s) <= maxLen {
		return s
	}
	return s[:maxLen] + "..."
}
