// Package domain holds the outbox entry as the publisher sees it: its
// Redis channel (RoutingKey) and the message published there.
package domain

import (
	"time"

	"github.com/north-cloud/infrastructure/outbox"
)

// OutboxStatus is the state of an outbox entry (infrastructure/outbox holds
// the statuses both services share).
type OutboxStatus = outbox.Status

// Outbox statuses.
const (
	OutboxStatusPending    = outbox.StatusPending
	OutboxStatusPublishing = outbox.StatusPublishing
	OutboxStatusPublished  = outbox.StatusPublished
	OutboxStatusFailed     = outbox.StatusFailed
)

// OutboxEntry is a classified document awaiting publication: the outbox row
// of the shared contract, with the publisher's routing and message body.
type OutboxEntry struct {
	outbox.Entry
}

// RoutingKey returns the Redis channel for this entry.
func (o *OutboxEntry) RoutingKey() string {
	if o.IsCrimeRelated && o.CrimeSubcategory != nil {
		return "articles:crime:" + *o.CrimeSubcategory
	}
	if o.IsCrimeRelated {
		return "articles:crime"
	}
	switch o.ContentType {
	case "article":
		return "articles:news"
	case "video":
		return "content:video"
	case "image":
		return "content:image"
	default:
		return "content:other"
	}
}

// ShouldRetry reports whether the entry has retries left.
func (o *OutboxEntry) ShouldRetry() bool {
	return o.RetryCount < o.MaxRetries
}

// ToPublishMessage is the message body published to Redis. A message is
// identified by (source, id, version): consumers deduplicate on it, and on
// publisher.outbox_id for the rare second delivery of one row. version is
// 1 for a document's first publication and grows when a classification
// changes its outcome (changed_fields names what changed); canonical_url is
// the article's URL in canonical form; duplicate_of names the document
// whose text this one copies ({index, id, kind}), null for an original.
// primary_topic and primary_topic_confidence, beside the spec's fields and
// present only when the document got a topic, are the classifier's primary
// section (the first of topics) and its probability, 0..1.
// traceparent, beside the spec's fields and present only when the document
// was traced, is the W3C trace context of its publication: a consumer that
// continues it sees the document's trace from the raw index on (the worker
// puts its publish span's context there; the row's otherwise).
func (o *OutboxEntry) ToPublishMessage(now time.Time) map[string]any {
	topics := o.Topics
	if topics == nil {
		topics = []string{}
	}
	m := map[string]any{
		"id":                o.ContentID,
		"source":            o.SourceName,
		"index":             o.IndexName,
		"content_type":      o.ContentType,
		"topics":            topics,
		"quality_score":     o.QualityScore,
		"is_crime_related":  o.IsCrimeRelated,
		"crime_subcategory": o.CrimeSubcategory,
		"title":             o.Title,
		"body":              o.Body,
		"url":               o.URL,
		"published_date":    o.PublishedDate,
		"version":           max(o.Version, 1),
		"changed_fields":    o.ChangedFields,
		"canonical_url":     nullIfEmpty(o.CanonicalURL),
		"duplicate_of":      o.DuplicateOf,
		"publisher": map[string]any{
			"outbox_id":    o.ID,
			"published_at": now.UTC().Format(time.RFC3339),
			"channel":      o.RoutingKey(),
		},
	}
	if o.Traceparent != "" {
		m["traceparent"] = o.Traceparent
	}
	if o.PrimaryTopic != "" {
		m["primary_topic"] = o.PrimaryTopic
		m["primary_topic_confidence"] = o.PrimaryTopicConfidence
	}
	return m
}

// nullIfEmpty is nil (JSON null) for "", s otherwise.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
