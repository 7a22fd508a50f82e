package processor

import (
	"context"
	"testing"

	"github.com/north-cloud/classifier/internal/domain"
)

// A stalled document is dead-lettered without admission, and still under
// its raw index's source, never the source_name its writer put in it.
func TestStalledDocumentBelongsToItsIndexSource(t *testing.T) {
	t.Parallel()
	b := newProcessor(t, gate{release: make(chan struct{})}, make(chan Result, 1), 1)
	raw := doc("stuck")
	raw.Index, raw.SourceName, raw.Stalled = "news_raw_content", "writer-chosen-9f3a", true
	res := b.process(context.Background(), 0, raw)
	if res.Code != domain.ErrorCodeStalled {
		t.Fatalf("code %q, want %q", res.Code, domain.ErrorCodeStalled)
	}
	if res.Raw.SourceName != "news" {
		t.Errorf("stalled document under source %q, want its index's news", res.Raw.SourceName)
	}
}
