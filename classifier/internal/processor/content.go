package processor

import (
	"context"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/esbulk"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/fault"
)

// ContentWriter is the classified indices (storage.ContentStore in the
// service), as the committer uses them.
type ContentWriter interface {
	WriteClassified(ctx context.Context, docs []*domain.ClassifiedContent) ([]esbulk.Result, error)
	Ping(ctx context.Context) error
}

// content writes the classified documents to Elasticsearch.
type content struct {
	store ContentWriter
	es    *breaker.Breaker
}

// write stores the documents of rs in one bulk (split as it must be). It
// returns those written; those that failed, with their error code; and
// those to write again once dep, Elasticsearch, answers again: the whole
// batch when the cluster is out, the items it refused for its load when
// its ping fails too.
func (c *content) write(ctx context.Context, rs []Result) (written, failed, retry []Result, dep *breaker.Breaker) {
	items, err := c.store.WriteClassified(ctx, docsOf(rs))
	if err != nil {
		switch kind := fault.ElasticsearchProved(ctx, err, c.store.Ping); kind {
		case fault.Dependency:
			c.es.Failure(err)
			return nil, nil, rs, c.es
		default:
			return nil, withError(rs, faultCode(kind, true, err), err), nil, nil
		}
	}
	c.es.Success()
	// A 429 or 5xx of some items is an outage only if the cluster fails its
	// ping; else their own index is at fault, and they are retried through
	// the dead-letter queue while the rest of the batch is committed.
	prover := fault.ItemProver{Probe: c.store.Ping}
	for i, item := range items {
		if item.Err == nil {
			written = append(written, rs[i])
			continue
		}
		switch kind := prover.Kind(ctx, item.Status, item.Err.Error()); kind {
		case fault.Dependency:
			c.es.Failure(item.Err)
			retry, dep = append(retry, rs[i]), c.es
		default:
			failed = append(failed, Result{Raw: rs[i].Raw, Err: item.Err, Code: faultCode(kind, true, item.Err)})
		}
	}
	return written, failed, retry, dep
}
