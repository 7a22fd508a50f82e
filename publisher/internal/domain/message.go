package domain

import (
	"time"

	"github.com/north-cloud/infrastructure/outbox"
)

// Message is the body ToPublishMessage describes, as a struct: the worker
// encodes every message it publishes, and encoding/json sorts the keys of a
// map on every call (a fifth of a draining worker's CPU time). Its fields
// are declared in that sorted order, so a Message encodes to the same bytes
// as the map (TestMessageEncodesLikeToPublishMessage holds them equal): a
// field added to the map is added here too, in its place.
type Message struct {
	Body             string         `json:"body"`
	CanonicalURL     *string        `json:"canonical_url"`
	ChangedFields    []string       `json:"changed_fields"`
	ContentType      string         `json:"content_type"`
	CrimeSubcategory *string        `json:"crime_subcategory"`
	DuplicateOf      *outbox.DocRef `json:"duplicate_of"`
	ID               string         `json:"id"`
	Index            string         `json:"index"`
	IsCrimeRelated   bool           `json:"is_crime_related"`
	PrimaryTopic     string         `json:"primary_topic,omitempty"`
	// PrimaryTopicConfidence is present exactly when PrimaryTopic is.
	PrimaryTopicConfidence *float64         `json:"primary_topic_confidence,omitempty"`
	PublishedDate          *time.Time       `json:"published_date"`
	Publisher              MessagePublisher `json:"publisher"`
	QualityScore           int              `json:"quality_score"`
	Source                 string           `json:"source"`
	Title                  string           `json:"title"`
	Topics                 []string         `json:"topics"`
	Traceparent            string           `json:"traceparent,omitempty"`
	URL                    string           `json:"url"`
	Version                int              `json:"version"`
}

// MessagePublisher is the message's "publisher" object.
type MessagePublisher struct {
	Channel     string `json:"channel"`
	OutboxID    string `json:"outbox_id"`
	PublishedAt string `json:"published_at"`
}

// Message returns the body published to Redis (see ToPublishMessage).
func (o *OutboxEntry) Message(now time.Time) Message {
	topics := o.Topics
	if topics == nil {
		topics = []string{}
	}
	var canonical *string
	if o.CanonicalURL != "" {
		canonical = &o.CanonicalURL
	}
	var confidence *float64
	if o.PrimaryTopic != "" {
		confidence = &o.PrimaryTopicConfidence
	}
	return Message{
		PrimaryTopic:           o.PrimaryTopic,
		PrimaryTopicConfidence: confidence,
		Body:                   o.Body,
		CanonicalURL:           canonical,
		ChangedFields:          o.ChangedFields,
		ContentType:            o.ContentType,
		CrimeSubcategory:       o.CrimeSubcategory,
		DuplicateOf:            o.DuplicateOf,
		ID:                     o.ContentID,
		Index:                  o.IndexName,
		IsCrimeRelated:         o.IsCrimeRelated,
		PublishedDate:          o.PublishedDate,
		Publisher: MessagePublisher{
			Channel:     o.RoutingKey(),
			OutboxID:    o.ID,
			PublishedAt: now.UTC().Format(time.RFC3339),
		},
		QualityScore: o.QualityScore,
		Source:       o.SourceName,
		Title:        o.Title,
		Topics:       topics,
		Traceparent:  o.Traceparent,
		URL:          o.URL,
		Version:      max(o.Version, 1),
	}
}
