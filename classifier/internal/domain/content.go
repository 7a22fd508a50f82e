// Package domain holds the classifier's data types: the raw document it
// claims, the classified document it writes, a document's identity, and the
// codes that name why a document was not classified.
package domain

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/north-cloud/classifier/internal/fingerprint"
	"github.com/north-cloud/infrastructure/contentindex"
)

// Version is written to every classified document and history row, so an
// operator can tell which pipeline produced a classification.
const Version = "0.1.0"

// RawContent is a raw document claimed by this replica: the crawler's fields
// plus where it lives and the Elasticsearch version of the claim, which makes
// the final status flip conditional on nobody having taken it over since.
type RawContent struct {
	contentindex.RawDocument
	// Index is the raw index the document was read from.
	Index string
	// IndexUUID is the index.uuid of the incarnation of Index it was read
	// from (an index deleted and created again has a new one), when the
	// reader knew it (the poller does); claims compare versions only
	// within one incarnation (package lease).
	IndexUUID string
	// SeqNo and PrimaryTerm identify the claimed version of the document.
	SeqNo       int64
	PrimaryTerm int64
	// DecodeError is set when the stored document could not be read into
	// RawDocument (a field of the wrong JSON type); such a document is
	// unprocessable.
	DecodeError string
	// FromDLQ is set when the dead-letter retry worker claimed the document.
	FromDLQ bool
	// Traceparent is the W3C traceparent of the document's own trace,
	// begun when the poller claimed it (classifier.claim.document): its
	// classification, its outbox row and the publisher's publish of it are
	// spans of that trace. Empty when tracing is off or the document was
	// claimed otherwise (the dead-letter retry worker).
	Traceparent string
	// Lease is the claim_id of this replica's claim on the document
	// (package lease): the row of raw_claims it holds, which a takeover
	// replaces. Zero when not claimed.
	Lease int64
	// Stalled is set when the document's lease expired without a commit
	// CLASSIFIER_MAX_STALLS times: it is dead-lettered as STALLED instead
	// of classified again.
	Stalled bool
	// Source is the whole _source at SeqNo, when this replica read it whole
	// (a search or a multi-get without source filtering) and has kept it
	// in step with its claim and renewals since. With it a claim, renewal, release
	// or flip is sent as the whole document, conditional on SeqNo, so
	// Elasticsearch need not read the stored one first; without it (a
	// filtered read, a document that did not decode) they are partial
	// updates.
	Source json.RawMessage
}

// DecodeRaw reads a raw document as Elasticsearch returned it (a search hit
// or a multi-get doc). Its identity is always the index and _id: an id field
// in _source that differs is ignored (it would name another document, or
// none) and returned as sourceID for the caller to report. A _source that
// does not decode (a field of the wrong JSON type)
// gives an empty document with DecodeError set, so that one malformed
// document is failed on its own with that reason and never stalls the
// others.
func DecodeRaw(index, id string, seqNo, primaryTerm int64, source []byte) (raw *RawContent, sourceID string) {
	raw = &RawContent{Index: index, SeqNo: seqNo, PrimaryTerm: primaryTerm}
	if err := json.Unmarshal(source, &raw.RawDocument); err != nil {
		raw.RawDocument = contentindex.RawDocument{}
		raw.DecodeError = err.Error()
	}
	sourceID, raw.ID = raw.ID, id
	return raw, sourceID
}

// DuplicateRef names the original of a duplicate and why it is one.
type DuplicateRef struct {
	Index string `json:"index"`
	ID    string `json:"id"`
	// Kind is "url" (the same canonical URL) or "content" (the same or
	// nearly the same text).
	Kind string `json:"kind"`
}

// DocKey is a document's identity: its raw index and _id. Ids are unique
// only inside one index, so every key on a content id carries the index.
type DocKey struct {
	Index string
	ID    string
}

// ClaimID names one claim of a document; a document classified again after
// a crash or a lease expiry gets a new one.
func (r *RawContent) ClaimID() string {
	if r.Lease != 0 {
		return r.ClaimedBy + "@" + strconv.FormatInt(r.Lease, 10)
	}
	if r.ClaimedAt == nil {
		return r.ClaimedBy
	}
	return r.ClaimedBy + "@" + r.ClaimedAt.UTC().Format(time.RFC3339Nano)
}

// QualityFactors explains a quality score; each factor is 0..1.
type QualityFactors struct {
	WordCount   float64 `json:"word_count"`
	Metadata    float64 `json:"metadata"`
	Richness    float64 `json:"richness"`
	Readability float64 `json:"readability"`
}

// TopicScore is one matched topic and its score.
type TopicScore struct {
	Topic string  `json:"topic"`
	Score float64 `json:"score"`
}

// ClassifiedContent is the document written to {source}_classified_content,
// with _id equal to the raw id so that rewriting it is idempotent.
type ClassifiedContent struct {
	// Traceparent is the raw document's (RawContent.Traceparent); it is not
	// stored, only carried to the outbox row.
	Traceparent     string     `json:"-"`
	ID              string     `json:"id"`
	URL             string     `json:"url"`
	SourceName      string     `json:"source_name"`
	Title           string     `json:"title"`
	RawText         string     `json:"raw_text"`
	RawHTML         string     `json:"raw_html,omitempty"`
	OGType          string     `json:"og_type,omitempty"`
	MetaDescription string     `json:"meta_description,omitempty"`
	PublishedDate   *time.Time `json:"published_date,omitempty"`
	CrawledAt       time.Time  `json:"crawled_at"`
	WordCount       int        `json:"word_count"`
	// ClassificationStatus is always "classified" here.
	ClassificationStatus string `json:"classification_status"`

	ContentType           string         `json:"content_type"`
	ContentTypeConfidence float64        `json:"content_type_confidence"`
	ContentTypeMethod     string         `json:"content_type_method"`
	QualityScore          int            `json:"quality_score"`
	QualityFactors        QualityFactors `json:"quality_factors"`
	Topics                []string       `json:"topics"`
	TopicScores           []TopicScore   `json:"topic_scores"`
	// PrimaryTopic is the document's one section (the first of Topics) and
	// PrimaryTopicConfidence its probability, 0..1 (package topicmodel);
	// additions beside the spec's topics and topic_scores. Empty and 0
	// when no topic was found.
	PrimaryTopic           string  `json:"primary_topic,omitempty"`
	PrimaryTopicConfidence float64 `json:"primary_topic_confidence,omitempty"`
	// TopicDisputed is set when the rules and the model disagree on the
	// document's topics (topicmodel.Decision.Disputed): a candidate for an
	// operator's label.
	TopicDisputed     bool      `json:"topic_disputed,omitempty"`
	IsCrimeRelated    bool      `json:"is_crime_related"`
	CrimeSubcategory  *string   `json:"crime_subcategory,omitempty"`
	SourceReputation  float64   `json:"source_reputation"`
	Confidence        float64   `json:"confidence"`
	ClassifierVersion string    `json:"classifier_version"`
	ClassifiedAt      time.Time `json:"classified_at"`

	// ProcessingStrategy is how the document was classified, from its URL's
	// class (admission.AssessURL): "standard" from title and text,
	// "metadata_only" from title and meta description (a social media or
	// video platform page). IsProcessable is true on every classified
	// document: refused ones ("refuse") are dead letters, not classified.
	ProcessingStrategy string `json:"processing_strategy,omitempty"`
	IsProcessable      bool   `json:"is_processable"`
	// URLClass is the URL's class (web_page, social_media, video_platform).
	URLClass string `json:"url_class,omitempty"`

	// CanonicalURL is URL in canonical form (package canonical): the
	// identity by which the same article under another URL is recognised.
	CanonicalURL string `json:"canonical_url,omitempty"`
	// ContentHash is the exact fingerprint of the normalized title and
	// body (package fingerprint).
	ContentHash string `json:"content_hash,omitempty"`
	// DuplicateOf names the document this one duplicates; nil for an
	// original.
	DuplicateOf *DuplicateRef `json:"duplicate_of,omitempty"`
	// Version is the publication subscribers were told about: 1 for the
	// first, one more per changed outcome; 0 until decided.
	Version int `json:"version,omitempty"`
	// ChangedFields names what changed since the previous version; not
	// stored in Elasticsearch.
	ChangedFields []string `json:"-"`
	// Publish says whether this classification goes to the outbox: false
	// for a URL duplicate, a skipped content duplicate or an unchanged
	// outcome. Not stored.
	Publish bool `json:"-"`
	// Fingerprint is the text's fingerprints, for duplicate detection;
	// not stored in Elasticsearch.
	Fingerprint fingerprint.Fingerprint `json:"-"`

	// Index is the classified index the document is written to; not stored.
	Index string `json:"-"`
	// RawIndex is the raw index the document came from: with ID, its
	// identity (DocKey). Not stored.
	RawIndex string `json:"-"`
	// ClaimID is the claim that produced it; not stored in Elasticsearch.
	ClaimID string `json:"-"`
	// ReprocessTask is the raw document's reprocess_task: the reprocess
	// task that set it back to pending, whose counts of documents
	// classified again and of changed topics this classification adds to
	// (storage.HistoryRepository.InsertBatch). Not stored in
	// Elasticsearch.
	ReprocessTask string `json:"-"`
}
