package processor

import (
	"context"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
)

// DefaultBatchProcessorConfig returns the pool's defaults under the
// original design's name (architecture.md 3.3): ConcurrencyDefault workers,
// MaxQueueDepthDefault queued documents, SubmitTimeoutDefault. A zero field
// of BatchProcessorConfig takes the same default in NewBatchProcessor.
func DefaultBatchProcessorConfig() BatchProcessorConfig {
	return BatchProcessorConfig{
		Concurrency:   ConcurrencyDefault,
		MaxQueueDepth: MaxQueueDepthDefault,
		SubmitTimeout: SubmitTimeoutDefault,
	}
}

// ProcessResult is the original design's outcome of one document, Result
// under its field names (Content is Doc, RawItem is Raw, Error is Err), with
// the error code that decides a failure's retries beside them. Duration is
// zero when the ProcessResult comes from a Result: a worker records how long
// a document took in classifier_processing_duration_seconds (by source)
// rather than on each result.
type ProcessResult struct {
	Content  *domain.ClassifiedContent
	RawItem  *domain.RawContent
	Error    error
	Duration time.Duration
	Code     domain.ErrorCode
}

// AsProcessResult returns r under the original design's names.
func (r Result) AsProcessResult() *ProcessResult {
	return &ProcessResult{Content: r.Doc, RawItem: r.Raw, Error: r.Err, Code: r.Code}
}

// ResultHandler is the original design's way to receive results: a function
// the workers called for each document. Here the workers send their results
// on an Output, so that the committer can commit them in batches; Output
// turns a ResultHandler into one.
type ResultHandler func(ctx context.Context, result *ProcessResult)

// Output returns an Output whose results are handed to h, one at a time on
// a goroutine of its own, until ctx ends; the Output's Done is ctx's, so a
// worker with a result after that drops it instead of blocking (the
// document stays claimed, as with the committer). Cancel ctx after the
// processor's Stop has returned to hand over every result; h may still be
// running on the last one then.
func (h ResultHandler) Output(ctx context.Context) Output {
	c := make(chan Result)
	go func() {
		for {
			select {
			case r := <-c:
				h(ctx, r.AsProcessResult())
			case <-ctx.Done():
				return
			}
		}
	}()
	return Output{C: c, Done: ctx.Done()}
}
