package storage

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// statusCounter records the status of every bulk response.
type statusCounter struct {
	mu       sync.Mutex
	requests int
	statuses map[int]int
	next     http.RoundTripper
}

func (c *statusCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, "/_bulk") {
		c.mu.Lock()
		c.requests++
		c.statuses[res.StatusCode]++
		c.mu.Unlock()
	}
	return res, err
}

func largeDocs(prefix string, n, size int) []*domain.ClassifiedContent {
	body := strings.Repeat("word ", size/5)
	docs := make([]*domain.ClassifiedContent, n)
	for i := range docs {
		docs[i] = &domain.ClassifiedContent{ID: fmt.Sprintf("%s-%03d", prefix, i),
			Index: contentindex.ClassifiedIndex(prefix + "_src"), Title: "t", RawText: body, ClassificationStatus: contentindex.StatusClassified}
	}
	return docs
}

// A commit bulk larger than Elasticsearch's http.max_content_length (100 MB:
// 200 documents of 520 KB) is answered 413 as a whole. That is no fault of
// any document: the request is split and every document is written. With
// the byte bound (MaxBulkBytes, 16 MiB by default) such a batch never
// reaches the limit in the first place.
func TestOversizedBulkIsSplitNotFailed(t *testing.T) {
	t.Parallel()
	_, prefix := testenv.Elasticsearch(t)
	for _, tc := range []struct {
		name     string
		maxBytes int
		want413  bool
		minBulks int
		idPrefix string
	}{
		{name: "unbounded request gets 413 and is split", maxBytes: 1 << 30, want413: true, minBulks: 3, idPrefix: "a"},
		{name: "default byte bound never reaches the limit", maxBytes: 0, want413: false, minBulks: 7, idPrefix: "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := &statusCounter{statuses: map[int]int{}, next: http.DefaultTransport}
			es, err := esclient.NewLazy(esclient.Config{URL: testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch"), Transport: counter})
			if err != nil {
				t.Fatal(err)
			}
			store := NewContentStoreWith(es, StoreConfig{MaxBulkBytes: tc.maxBytes})
			docs := largeDocs(prefix+tc.idPrefix, 200, 520<<10)
			items, err := store.WriteClassified(context.Background(), docs)
			if err != nil {
				t.Fatalf("write: %v", err)
			}
			for i, it := range items {
				if it.Err != nil {
					t.Fatalf("document %d: %v", i, it.Err)
				}
			}
			if got := counter.statuses[http.StatusRequestEntityTooLarge] > 0; got != tc.want413 {
				t.Errorf("413 seen = %v, want %v (statuses %v)", got, tc.want413, counter.statuses)
			}
			if counter.requests < tc.minBulks {
				t.Errorf("bulk requests = %d, want at least %d", counter.requests, tc.minBulks)
			}
		})
	}
}
