package domain_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/publisher/internal/domain"
)

// The struct the worker encodes and the map that describes the message
// encode to the same bytes, for entries with every optional field empty and
// with every one set (text that JSON escapes included).
func TestMessageEncodesLikeToPublishMessage(t *testing.T) {
	t.Parallel()
	sub := "violent_crime"
	published := time.Date(2026, 11, 26, 7, 30, 0, 123, time.FixedZone("x", 3600))
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	entries := map[string]domain.OutboxEntry{
		"empty": {},
		"minimal": {Entry: outbox.Entry{ID: "6f1c", Message: outbox.Message{ContentID: "c-1", SourceName: "s",
			IndexName: "s_classified_content", ContentType: "article", Title: "t", URL: "https://example.com/a"}}},
		"full": {Entry: outbox.Entry{ID: "9a2b", Message: outbox.Message{ContentID: "c-2", SourceName: "wire",
			IndexName: "wire_classified_content", ContentType: "video", Topics: []string{"crime", "news"}, QualityScore: 87,
			IsCrimeRelated: true, CrimeSubcategory: &sub, Title: `"Quoted" <b>title</b> & more`, Body: "line\nnext\u2028é",
			URL: "https://example.com/b?x=1&y=2", PublishedDate: &published, Version: 3, ChangedFields: []string{"topics"},
			CanonicalURL: "https://example.com/b", DuplicateOf: &outbox.DocRef{Index: "a_raw_content", ID: "a-1", Kind: "content"},
			Traceparent:  "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
			PrimaryTopic: "crime", PrimaryTopicConfidence: 0.8125}}},
		"empty lists": {Entry: outbox.Entry{Message: outbox.Message{Topics: []string{}, ChangedFields: []string{}}}},
	}
	for name, e := range entries {
		want, err := json.Marshal(e.ToPublishMessage(now))
		if err != nil {
			t.Fatalf("%s: marshal map: %v", name, err)
		}
		got, err := json.Marshal(e.Message(now))
		if err != nil {
			t.Fatalf("%s: marshal struct: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the struct encodes to\n%s\nthe map to\n%s", name, got, want)
		}
	}
}
