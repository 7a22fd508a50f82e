package republish_test

import (
	"context"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/republish"
)

// After the cleanup forgets what subscribers were told, a document's next
// publication takes the version after every one it had, published or only
// reserved: reusing one would be absorbed by an outbox row the publisher
// may still hold (ON CONFLICT DO NOTHING), recorded as published, and the
// change never sent.
func TestForgottenOutcomeNeverReusesAVersion(t *testing.T) {
	db := openDB(t)
	s := republish.New(db)
	ctx := context.Background()
	key := domain.DocKey{Index: "a_raw_content", ID: "doc"}
	item := func(topic string) []republish.Item {
		return []republish.Item{{Key: key, Outcome: republish.Outcome{ContentType: "article", Topics: []string{topic}, TextHash: "h"}}}
	}
	plan := func(topic string) republish.Decision {
		t.Helper()
		d, err := s.Plan(ctx, item(topic))
		if err != nil {
			t.Fatal(err)
		}
		return d[0]
	}
	// v1 published and recorded; v2 reserved, its outbox row written, then
	// the replica died before recording it.
	if err := s.Record(ctx, item("sports"), []republish.Decision{plan("sports")}); err != nil {
		t.Fatal(err)
	}
	d2 := plan("crime")
	if d2.Version != 2 {
		t.Fatalf("second outcome: version %d, want 2", d2.Version)
	}
	if err := s.Reserve(ctx, item("crime"), []republish.Decision{d2}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE published_outcomes SET published_at = NOW() - INTERVAL '8 days'`,
		`UPDATE publish_reservations SET reserved_at = NOW() - INTERVAL '8 days'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Cleanup(ctx, 7*24*time.Hour, 100); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"politics", "sports", "crime"} {
		if d := plan(topic); !d.Publish || d.Version != 3 {
			t.Fatalf("%s after the cleanup: %+v, want published as version 3", topic, d)
		}
	}
	if err := s.Record(ctx, item("politics"), []republish.Decision{plan("politics")}); err != nil {
		t.Fatal(err)
	}
	if d := plan("politics"); d.Publish || d.Version != 3 {
		t.Fatalf("the same outcome again: %+v, want not published, version 3", d)
	}
}
