// Package contentindex is the one source of truth for the content indices:
// their names ({source}_raw_content, {source}_classified_content), their
// strict mappings, and the index templates that apply those mappings to every
// new index of either kind.
package contentindex

import (
	"regexp"
	"strings"
	"time"
)

// Index name suffixes. A source's raw documents live in Source+RawSuffix and
// its classified documents in Source+ClassifiedSuffix.
const (
	RawSuffix        = "_raw_content"
	ClassifiedSuffix = "_classified_content"
)

// Raw document classification statuses (the classification_status field).
const (
	StatusPending    = "pending"
	StatusProcessing = "processing"
	StatusClassified = "classified"
	StatusFailed     = "failed"
)

// Type says which kind of content index a name denotes.
type Type string

// Index types, as the index-manager API reports them.
const (
	TypeRaw        Type = "raw_content"
	TypeClassified Type = "classified_content"
	TypeOther      Type = "other"
)

var sourcePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,199}$`)

// ValidSource reports whether s can name a source: lowercase letters, digits,
// '_' and '-', starting with a letter or digit, so that the index names built
// from it are valid Elasticsearch names with no wildcard or path characters.
func ValidSource(s string) bool { return sourcePattern.MatchString(s) }

// RawIndex returns the raw content index of a source.
func RawIndex(source string) string { return source + RawSuffix }

// ClassifiedIndex returns the classified content index of a source.
func ClassifiedIndex(source string) string { return source + ClassifiedSuffix }

// ClassifiedIndexFor maps a raw index name to its classified twin.
func ClassifiedIndexFor(rawIndex string) string {
	return strings.TrimSuffix(rawIndex, RawSuffix) + ClassifiedSuffix
}

// TypeOf classifies an index name by its suffix.
func TypeOf(index string) Type {
	switch {
	case strings.HasSuffix(index, RawSuffix) && len(index) > len(RawSuffix):
		return TypeRaw
	case strings.HasSuffix(index, ClassifiedSuffix) && len(index) > len(ClassifiedSuffix):
		return TypeClassified
	default:
		return TypeOther
	}
}

// RawDocument is a crawled page as the crawler (or the loader) writes it into
// {source}_raw_content. ID equals the Elasticsearch _id. PublishedDate is a
// string because crawlers send unparsable dates; the mapping ignores
// malformed values and the classifier parses what it can.
type RawDocument struct {
	ID                   string     `json:"id"`
	URL                  string     `json:"url"`
	SourceName           string     `json:"source_name"`
	Title                string     `json:"title"`
	RawText              string     `json:"raw_text"`
	RawHTML              string     `json:"raw_html,omitempty"`
	OGType               string     `json:"og_type,omitempty"`
	MetaDescription      string     `json:"meta_description,omitempty"`
	PublishedDate        string     `json:"published_date,omitempty"`
	CrawledAt            time.Time  `json:"crawled_at"`
	WordCount            int        `json:"word_count"`
	ClassificationStatus string     `json:"classification_status"`
	ClaimedBy            string     `json:"claimed_by,omitempty"`
	ClaimedAt            *time.Time `json:"claimed_at,omitempty"`
	ClassificationError  string     `json:"classification_error,omitempty"`
	// Priority is one of the five levels (Priorities), or empty for the
	// level of the document's source (normal when the source has no mark).
	// A backfill or a reprocess run writes "low".
	Priority string `json:"priority,omitempty"`
	// PendingSince is when a document that had been classified or had
	// failed was set back to pending (a reprocess); absent on a document
	// pending since its crawl. WaitingSince reads the two.
	PendingSince *time.Time `json:"pending_since,omitempty"`
	// ReprocessTask is the id of the reprocess task (reprocess_tasks.id)
	// that last set the document back to pending; the classifier counts
	// on that task whether the document's topics changed when it was
	// classified again. Absent on a document no reprocess has touched.
	ReprocessTask string `json:"reprocess_task,omitempty"`
}

// WaitingSince is when d became pending: PendingSince when it was set back
// to pending after its crawl, crawled_at otherwise (zero when neither is
// known). The classifier's poller lag is measured from it, so documents a
// reprocess queues again are not counted as waiting since their crawl.
func (d *RawDocument) WaitingSince() time.Time {
	if d.PendingSince != nil && d.PendingSince.After(d.CrawledAt) {
		return *d.PendingSince
	}
	return d.CrawledAt
}

// The five priority levels of a raw document (RawDocument.Priority) or a
// source, highest first. Their values (PriorityValue) are those of the
// queue hygiene rules: critical 100, high 80, normal 50, low 20, cleanup 10.
const (
	PriorityCritical = "critical"
	PriorityHigh     = "high"
	PriorityNormal   = "normal"
	PriorityLow      = "low"
	PriorityCleanup  = "cleanup"
)

// Priorities lists the levels, highest first.
func Priorities() []string {
	return []string{PriorityCritical, PriorityHigh, PriorityNormal, PriorityLow, PriorityCleanup}
}

// PriorityValue is the numeric value of a level (100 to 10), and 0 with
// false for a name that is none of them. The empty name is normal.
func PriorityValue(level string) (int, bool) {
	switch level {
	case PriorityCritical:
		return 100, true
	case PriorityHigh:
		return 80, true
	case PriorityNormal, "":
		return 50, true
	case PriorityLow:
		return 20, true
	case PriorityCleanup:
		return 10, true
	}
	return 0, false
}

// PriorityBelowNormal reports whether level is low or cleanup: work that
// waits for the capacity kept for the backlog.
func PriorityBelowNormal(level string) bool {
	return level == PriorityLow || level == PriorityCleanup
}
