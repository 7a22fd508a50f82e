package processor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// One classified index refusing its items (a flood-stage block: 429 per
// item) while the cluster answers its ping is that index's fault, not an
// outage: its documents are dead-lettered for a retry, the other index's
// documents of the same batch are committed, and the Elasticsearch breaker
// stays closed, so no other index is paused. Before, every such item
// counted a breaker failure and the batch was held until the block lifted.
func TestOneIndexRefusingItsItemsPausesNoOtherIndex(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 40)
	r := e.replica(t, "flood", nil, time.Minute)
	blocked := contentindex.ClassifiedIndex(e.prefix + "_flooded")
	res, err := e.es.Indices.Create(blocked, e.es.Indices.Create.WithBody(strings.NewReader(
		`{"settings":{"number_of_replicas":0,"index.blocks.read_only_allow_delete":true}}`)))
	if err := esclient.CheckResponse("create the flooded index", res, err); err != nil {
		t.Fatal(err)
	}
	results := e.classifyAll(t, ids, func(i int, r *Result) {
		if i%2 == 0 {
			r.Doc.Index = blocked
		}
	})

	done := make(chan struct{})
	go func() {
		r.committer.Commit(context.Background(), results)
		close(done)
	}()
	for settled := false; !settled; {
		select {
		case <-done:
			settled = true
		case <-time.After(10 * time.Millisecond):
			if r.opened.Load() > 0 {
				t.Fatal("the Elasticsearch breaker opened for one index's refused items: every index is paused")
			}
		}
	}
	if r.opened.Load() > 0 {
		t.Fatal("a breaker opened")
	}

	st := e.statuses(t)
	for i, id := range ids {
		want := contentindex.StatusClassified
		if i%2 == 0 {
			want = contentindex.StatusFailed
		}
		if st[id] != want {
			t.Errorf("document %d (%s) is %q, want %q", i, id, st[id], want)
		}
	}
	rows, err := e.db.Query(`SELECT content_id, error_code, max_retries FROM dead_letter_queue`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, code string
		var maxRetries int
		if err := rows.Scan(&id, &code, &maxRetries); err != nil {
			t.Fatal(err)
		}
		n++
		if code != string(domain.ErrorCodeESUnavailable) || maxRetries == 0 {
			t.Errorf("dead letter %s: %s with %d retries, want %s with retries", id, code, maxRetries, domain.ErrorCodeESUnavailable)
		}
	}
	if n != len(ids)/2 {
		t.Errorf("%d dead letters, want %d (the flooded index's documents)", n, len(ids)/2)
	}
}
