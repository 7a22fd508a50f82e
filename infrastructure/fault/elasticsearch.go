package fault

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/north-cloud/infrastructure/esclient"
)

// Elasticsearch classifies an error of a whole Elasticsearch request (a
// bulk, a search). A request that reached Elasticsearch and was refused as
// a whole for what it carried (400, 404 of an index, 413 that a split could
// not cure) is a Statement fault; unavailable, overloaded (429, 5xx),
// unauthorized (401, 403 other than an index block) and unreachable are
// the dependency's; a 408 and our own cancellation are transient. An error
// without a response is the cluster's when it could not be reached
// (connection refused or reset, DNS), and Ambiguous when our own deadline
// passed (a slow request, or a cluster gone quiet): ElasticsearchProved
// tells them apart with a probe.
func Elasticsearch(err error) Kind {
	if err == nil {
		return Transient
	}
	var re *esclient.ResponseError
	if errors.As(err, &re) {
		switch {
		case re.Status == http.StatusUnauthorized, re.Status == http.StatusForbidden && !IsBlock(re.Body):
			return Dependency
		case re.Status == http.StatusTooManyRequests, re.Status >= 500:
			return Dependency
		case re.Status == http.StatusRequestTimeout:
			return Transient
		case re.Status >= 400:
			return Statement
		}
	}
	if errors.Is(err, context.Canceled) {
		return Transient
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return Ambiguous
	}
	return Dependency // connection refused, reset, DNS
}

// ElasticsearchProved classifies err (Elasticsearch) and settles an
// Ambiguous answer with probe (a cluster ping): a cluster that fails it is
// out (Dependency); one that answers was only slow for this request, which
// is retried with backoff (Transient), never charged to the document's
// data.
func ElasticsearchProved(ctx context.Context, err error, probe Probe) Kind {
	kind := Elasticsearch(err)
	if kind != Ambiguous {
		return kind
	}
	if Proved(ctx, kind, probe) == Dependency {
		return Dependency
	}
	return Transient
}

// ElasticsearchItem classifies the error of one item of a bulk request.
// Per item, a 4xx other than 408/409/429 is the item's (a mapping that
// refuses its value, a document too large); 429 and 5xx mean the cluster is
// overloaded or a shard is unavailable; 408, 409 and an index block
// (read-only, disk flood stage: it lifts in time) are transient.
func ElasticsearchItem(status int, body string) Kind {
	switch {
	case status == http.StatusTooManyRequests || status >= 500:
		return Dependency
	case status == http.StatusForbidden && IsBlock(body):
		return Transient
	case status == http.StatusRequestTimeout || status == http.StatusConflict:
		return Transient
	case status >= 400:
		return Statement
	default:
		return Transient
	}
}

// ItemProver classifies the errors of the items of one bulk answer
// (ElasticsearchItem) and settles their Dependency answers with one probe
// of the cluster (a ping), made at the first such item. A 429 or 5xx of one
// item is the cluster's only when the cluster fails its probe: when it
// answers, the fault is the item's own index (a primary shard unassigned or
// relocating, a flood-stage block, a full queue on the node holding it),
// and the item is Transient: retried with backoff for that document, never
// opening the breaker that pauses every index. Use one ItemProver per bulk
// answer.
type ItemProver struct {
	// Probe is the cluster's cheap check (a ping).
	Probe  Probe
	probed bool
	outage bool
}

// Kind is the kind of an item's fault: status and body are the item's.
func (p *ItemProver) Kind(ctx context.Context, status int, body string) Kind {
	kind := ElasticsearchItem(status, body)
	if kind != Dependency {
		return kind
	}
	if !p.probed {
		p.probed = true
		p.outage = Proved(ctx, Ambiguous, p.Probe) == Dependency
	}
	if p.outage {
		return Dependency
	}
	return Transient
}

// IsBlock reports a cluster or index block (read-only index, disk flood
// stage) in an error body: Elasticsearch answers 403 for those too, but
// they are about one index, not our credentials.
func IsBlock(body string) bool {
	return strings.Contains(body, "cluster_block_exception")
}

// IsTimeout reports an Elasticsearch answer that the request timed out
// (408, 504) or a deadline of our own.
func IsTimeout(err error) bool {
	var re *esclient.ResponseError
	if errors.As(err, &re) {
		return re.Status == http.StatusRequestTimeout || re.Status == http.StatusGatewayTimeout
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
