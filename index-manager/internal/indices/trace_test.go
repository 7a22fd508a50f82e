package indices_test

import (
	"context"
	"errors"
	"testing"

	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/infrastructure/testenv/spantest"
)

// Each Elasticsearch call of the store is a span named after its operation,
// under the span of the request that made it, with the error it met.
func TestStoreCallsAreSpans(t *testing.T) {
	t.Parallel()
	tp, spans := spantest.New(t)
	es, err := esclient.NewLazy(esclient.Config{URL: testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch"), TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	store, err := indices.NewStore(es)
	if err != nil {
		t.Fatal(err)
	}
	ctx, request := tp.Tracer("test").Start(context.Background(), "GET /api/v1/indices/:name/documents/:id")
	_, err = store.Document(ctx, testenv.UniqueName("missing")+"_classified_content", "doc-1", indices.Read{})
	request.End()
	var e *indices.Error
	switch {
	case errors.As(err, &e) && e.Kind == indices.ErrUnavailable:
		testenv.Unavailable(t, "elasticsearch", err)
	case !errors.As(err, &e) || e.Kind != indices.ErrNotFound:
		t.Fatalf("Document(missing index) = %v, want not found", err)
	}
	for _, s := range spans.GetSpans() {
		if s.Name != "elasticsearch get document" {
			continue
		}
		if s.Parent.SpanID() != request.SpanContext().SpanID() {
			t.Errorf("span's parent = %v, want the request span %v", s.Parent.SpanID(), request.SpanContext().SpanID())
		}
		if len(s.Events) == 0 {
			t.Error("the not-found answer is not recorded on the span")
		}
		return
	}
	t.Errorf("no span named \"elasticsearch get document\" among %d spans", len(spans.GetSpans()))
}
