package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/worker"
)

// Content identity is (index, id) (docs/architecture.md): the same content
// id under two classified indices is two rows, each published once, and
// each message names its source and index next to the id; re-inserting
// either changes nothing.
func TestSameContentIDInTwoIndicesPublishedTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	sub := outboxtest.Subscribe(t, rs.Client())
	rows := []outboxtest.Row{
		{ContentID: "1", SourceName: "a", IndexName: "a_classified_content", ContentType: "article", QualityScore: 60, Title: "from a", URL: "https://a.example/1"},
		{ContentID: "1", SourceName: "b", IndexName: "b_classified_content", ContentType: "article", QualityScore: 60, Title: "from b", URL: "https://b.example/1"},
	}
	outboxtest.Insert(t, b.db, rows)
	outboxtest.Insert(t, b.db, rows) // the classifier's re-insertion: a no-op
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE content_id = '1'`); n != 2 {
		t.Fatalf("%d rows for content id 1 in two indices, want 2", n)
	}
	w := b.newWorker(t, worker.Config{}, b.repo, rs.Client())
	if n, err := w.DrainOnce(context.Background()); n != 2 || err != nil {
		t.Fatalf("drain: %d %v", n, err)
	}
	outboxtest.WaitFor(t, time.Minute, "both messages", func() bool { return len(sub.Messages("1")) == 2 })
	for _, r := range rows {
		msgs := sub.MessagesIn(r.IndexName, "1")
		if len(msgs) != 1 {
			t.Fatalf("%s/1: %d messages, want 1", r.IndexName, len(msgs))
		}
		if m := msgs[0]; m["id"] != "1" || m["source"] != r.SourceName || m["index"] != r.IndexName || m["title"] != r.Title {
			t.Errorf("%s/1: message id %v source %v index %v title %v", r.IndexName, m["id"], m["source"], m["index"], m["title"])
		}
	}
	if ids, total := sub.Distinct(); ids != 2 || total != 2 {
		t.Errorf("%d distinct contents in %d messages, want 2 and 2", ids, total)
	}
}
