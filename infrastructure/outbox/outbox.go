// Package outbox is the contract between the classifier, which writes
// classified documents into the transactional outbox, and the publisher,
// which drains it into Redis: the table and its NOTIFY channel, the row
// (Message, the envelope the classifier writes, inside Entry, the row the
// publisher reads), the statuses a row moves through, the one column list
// both ends use, and the classifier's batch insert.
//
// The publisher's migrations (publisher/migrations) own the table; a test
// there fails when the migrated table and this package disagree. Tests of
// either service create the table in a scratch database with TestSchema.
package outbox

import (
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Table is the outbox table, in the publisher's database.
const Table = "classified_outbox"

// NotifyChannel is the LISTEN/NOTIFY channel on which writers, after their
// inserts commit (Wake), and re-queues wake the publishers.
const NotifyChannel = "classified_outbox"

// Status is the state of an outbox row.
type Status string

// The statuses of a row: the classifier inserts it pending; a publisher
// claims it (publishing) and records its outcome (published, or failed with
// a retry due until its retries are spent).
const (
	StatusPending    Status = "pending"
	StatusPublishing Status = "publishing"
	StatusPublished  Status = "published"
	StatusFailed     Status = "failed"
)

// Message is what the classifier writes for one classified document: every
// column it sets (its database role may insert these and no others). A
// content id is unique only inside its index, so (IndexName, ContentID)
// identifies the document.
type Message struct {
	ContentID        string
	SourceName       string
	IndexName        string
	ContentType      string
	Topics           []string
	QualityScore     int
	IsCrimeRelated   bool
	CrimeSubcategory *string
	Title            string
	Body             string
	URL              string
	PublishedDate    *time.Time
	// Version is the document's publication: 1, then one more for each
	// classification with a changed outcome. (IndexName, ContentID,
	// Version) identifies a message.
	Version int
	// ChangedFields names the message fields that differ from the
	// previous version; nil for version 1.
	ChangedFields []string
	// CanonicalURL is URL reduced to its canonical form; empty when the
	// classifier did not compute one.
	CanonicalURL string
	// DuplicateOf names the document whose text this one copies (raw
	// index and id); nil for an original.
	DuplicateOf *DocRef
	// Traceparent is the W3C traceparent of the classifier's span that
	// wrote the row, so the publisher continues the document's trace;
	// empty (NULL) when the classifier does not trace.
	Traceparent string
	// PrimaryTopic is the decided primary section (the first of Topics)
	// and PrimaryTopicConfidence its probability, 0..1; empty (NULL both)
	// when the document got no topic.
	PrimaryTopic           string
	PrimaryTopicConfidence float64
}

// DocRef names a document: its raw index and id.
type DocRef struct {
	Index string `json:"index"`
	ID    string `json:"id"`
	// Kind says why: "content" (the same or nearly the same text).
	Kind string `json:"kind"`
}

// Entry is one outbox row as the publisher reads it: the classifier's
// Message and the queue state the publisher keeps beside it.
type Entry struct {
	ID string
	Message
	Status       Status
	RetryCount   int
	MaxRetries   int
	ErrorMessage *string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	PublishedAt  *time.Time
	NextRetryAt  *time.Time

	// dupIndex, dupID and dupKind receive the duplicate_of columns; Scan
	// turns them into Message.DuplicateOf.
	dupIndex, dupID, dupKind sql.NullString
}

// column is one column of the row: its name, whether the classifier writes
// it, how a Message supplies its value and where an Entry receives it.
type column struct {
	name    string
	written bool
	value   func(m *Message) any
	dest    func(e *Entry) any
}

// columns is the column list, in the order of SELECT and INSERT. It is the
// one place the row's columns are named in Go.
func columns() []column {
	return []column{
		{name: "id", dest: func(e *Entry) any { return &e.ID }},
		{name: "content_id", written: true, value: func(m *Message) any { return m.ContentID }, dest: func(e *Entry) any { return &e.ContentID }},
		{name: "source_name", written: true, value: func(m *Message) any { return m.SourceName }, dest: func(e *Entry) any { return &e.SourceName }},
		{name: "index_name", written: true, value: func(m *Message) any { return m.IndexName }, dest: func(e *Entry) any { return &e.IndexName }},
		{name: "content_type", written: true, value: func(m *Message) any { return m.ContentType }, dest: func(e *Entry) any { return &e.ContentType }},
		{name: "topics", written: true, value: topicsValue, dest: func(e *Entry) any { return (*pq.StringArray)(&e.Topics) }},
		{name: "quality_score", written: true, value: func(m *Message) any { return m.QualityScore }, dest: func(e *Entry) any { return &e.QualityScore }},
		{name: "is_crime_related", written: true, value: func(m *Message) any { return m.IsCrimeRelated }, dest: func(e *Entry) any { return &e.IsCrimeRelated }},
		{name: "crime_subcategory", written: true, value: func(m *Message) any { return m.CrimeSubcategory }, dest: func(e *Entry) any { return &e.CrimeSubcategory }},
		{name: "title", written: true, value: func(m *Message) any { return m.Title }, dest: func(e *Entry) any { return &e.Title }},
		{name: "body", written: true, value: func(m *Message) any { return m.Body }, dest: func(e *Entry) any { return nullString{&e.Body} }},
		{name: "url", written: true, value: func(m *Message) any { return m.URL }, dest: func(e *Entry) any { return &e.URL }},
		{name: "published_date", written: true, value: func(m *Message) any { return m.PublishedDate }, dest: func(e *Entry) any { return &e.PublishedDate }},
		{name: "version", written: true, value: versionValue, dest: func(e *Entry) any { return &e.Version }},
		{name: "changed_fields", written: true, value: func(m *Message) any { return nullArray(m.ChangedFields) }, dest: func(e *Entry) any { return (*pq.StringArray)(&e.ChangedFields) }},
		{name: "canonical_url", written: true, value: func(m *Message) any { return nullIfEmpty(m.CanonicalURL) }, dest: func(e *Entry) any { return nullString{&e.CanonicalURL} }},
		{name: "duplicate_of_index", written: true, value: func(m *Message) any { return dupField(m, func(d *DocRef) string { return d.Index }) }, dest: func(e *Entry) any { return &e.dupIndex }},
		{name: "duplicate_of_id", written: true, value: func(m *Message) any { return dupField(m, func(d *DocRef) string { return d.ID }) }, dest: func(e *Entry) any { return &e.dupID }},
		{name: "duplicate_kind", written: true, value: func(m *Message) any { return dupField(m, func(d *DocRef) string { return d.Kind }) }, dest: func(e *Entry) any { return &e.dupKind }},
		{name: "traceparent", written: true, value: func(m *Message) any { return nullIfEmpty(m.Traceparent) }, dest: func(e *Entry) any { return nullString{&e.Traceparent} }},
		{name: "primary_topic", written: true, value: func(m *Message) any { return nullIfEmpty(m.PrimaryTopic) }, dest: func(e *Entry) any { return nullString{&e.PrimaryTopic} }},
		{name: "primary_topic_confidence", written: true, value: confidenceValue, dest: func(e *Entry) any { return nullFloat{&e.PrimaryTopicConfidence} }},
		{name: "status", dest: func(e *Entry) any { return &e.Status }},
		{name: "retry_count", dest: func(e *Entry) any { return &e.RetryCount }},
		{name: "max_retries", dest: func(e *Entry) any { return &e.MaxRetries }},
		{name: "error_message", dest: func(e *Entry) any { return &e.ErrorMessage }},
		{name: "created_at", dest: func(e *Entry) any { return &e.CreatedAt }},
		{name: "updated_at", dest: func(e *Entry) any { return &e.UpdatedAt }},
		{name: "published_at", dest: func(e *Entry) any { return &e.PublishedAt }},
		{name: "next_retry_at", dest: func(e *Entry) any { return &e.NextRetryAt }},
	}
}

// versionValue is the message's version; an unset version is the first.
func versionValue(m *Message) any {
	if m.Version < 1 {
		return 1
	}
	return m.Version
}

// confidenceValue is the primary topic's confidence, NULL without a
// primary topic.
func confidenceValue(m *Message) any {
	if m.PrimaryTopic == "" {
		return nil
	}
	return m.PrimaryTopicConfidence
}

// nullArray is NULL for no values, the array otherwise.
func nullArray(v []string) any {
	if len(v) == 0 {
		return nil
	}
	return pq.StringArray(v)
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func dupField(m *Message, f func(*DocRef) string) any {
	if m.DuplicateOf == nil {
		return nil
	}
	return f(m.DuplicateOf)
}

// topicsValue is the topics array; no topics is the empty array (the
// column is NOT NULL), not NULL.
func topicsValue(m *Message) any {
	if m.Topics == nil {
		return pq.StringArray{}
	}
	return pq.StringArray(m.Topics)
}

// Columns returns the name of every column an Entry is read from, in the
// order Scan expects them. The table has more columns that only the
// database uses (the generated channel, the claim token).
func Columns() []string {
	cols := columns()
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

// InsertColumns returns the columns the classifier writes, in the order of
// the values InsertBatch sends. Every other column takes its default: a new
// row is always pending with no claim and no retry state.
func InsertColumns() []string {
	var out []string
	for _, c := range columns() {
		if c.written {
			out = append(out, c.name)
		}
	}
	return out
}

// SelectList is Columns joined for a SELECT or RETURNING clause.
func SelectList() string { return strings.Join(Columns(), ", ") }

// Scanner is a *sql.Rows or *sql.Row.
type Scanner interface {
	Scan(dest ...any) error
}

// Scan reads one row selected with SelectList into e.
func Scan(s Scanner, e *Entry) error {
	cols := columns()
	dest := make([]any, len(cols))
	for i, c := range cols {
		dest[i] = c.dest(e)
	}
	if err := s.Scan(dest...); err != nil {
		return fmt.Errorf("scan outbox entry: %w", err)
	}
	e.DuplicateOf = nil
	if e.dupIndex.Valid || e.dupID.Valid {
		e.DuplicateOf = &DocRef{Index: e.dupIndex.String, ID: e.dupID.String, Kind: e.dupKind.String}
	}
	return nil
}

// nullString scans a nullable text column into a string, NULL as "".
type nullString struct{ s *string }

func (n nullString) Scan(src any) error {
	var ns sql.NullString
	if err := ns.Scan(src); err != nil {
		return err
	}
	*n.s = ns.String
	return nil
}

// nullFloat scans a nullable float into a float64 (0 for NULL).
type nullFloat struct{ f *float64 }

func (n nullFloat) Scan(src any) error {
	var nf sql.NullFloat64
	if err := nf.Scan(src); err != nil {
		return err
	}
	*n.f = nf.Float64
	return nil
}
