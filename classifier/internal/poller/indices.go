package poller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/infrastructure/esclient"
)

// Reason codes of a failing index: the reason label of
// classifier_index_poll_failures_total and IndexStatus.ReasonCode.
const (
	// ReasonMapping: a field the poll sorts or filters on (crawled_at,
	// claimed_at) is not mapped as a date.
	ReasonMapping = "mapping"
	// ReasonSearch: the index's search failed (a bad mapping, a red index).
	ReasonSearch = "search_error"
	// ReasonWriteBlocked: the index carries a write block
	// (index.blocks.write, read_only, disk flood stage), so none of its
	// documents could be committed.
	ReasonWriteBlocked = "write_blocked"
)

// IndexStatus is the poll state of one raw index matching the pattern, as
// this replica sees it.
type IndexStatus struct {
	Index string `json:"index"`
	// Failing is true while the poller skips the index.
	Failing bool `json:"failing"`
	// ReasonCode is the kind of failure (ReasonMapping, ReasonSearch,
	// ReasonWriteBlocked); empty while healthy.
	ReasonCode string `json:"reason_code,omitempty"`
	// Reason is what Elasticsearch said, for an operator.
	Reason string `json:"reason,omitempty"`
	// Since is when the index started failing, or when this replica first
	// saw it or saw it recover.
	Since time.Time `json:"since"`
	// NextRetry is when a failing index is polled again; zero while healthy.
	NextRetry time.Time `json:"next_retry,omitzero"`
	// Failures is the number of consecutive failed polls of the index.
	Failures int `json:"consecutive_failures"`
}

// indexState is the poller's record of one raw index; guarded by Poller.mu.
type indexState struct {
	failing   bool
	code      string
	reason    string
	since     time.Time
	nextRetry time.Time
	failures  int
}

// resolution is the cached answer to "which raw indices match the pattern,
// and which of them have a mapping the poll cannot use".
type resolution struct {
	at      time.Time
	indices []string          // sorted
	mapping map[string]string // index -> mapping problem
	blocked map[string]string // index -> write block
}

// writeBlocks are the index settings that refuse writes. A claim is a row
// of the lease table, so a blocked index no longer refuses it: the block is
// read with the index list instead, and such an index is not polled, for
// none of its documents could be flipped (committed).
var writeBlocks = []string{"index.blocks.write", "index.blocks.read_only", "index.blocks.read_only_allow_delete"}

// blockedIndices returns the indices matching the pattern that carry a
// write block, with the reason.
func (p *Poller) blockedIndices(ctx context.Context) (map[string]string, error) {
	res, err := p.es.Indices.GetSettings(
		p.es.Indices.GetSettings.WithContext(ctx),
		p.es.Indices.GetSettings.WithIndex(p.cfg.IndexPattern),
		p.es.Indices.GetSettings.WithName("index.blocks.*"),
		p.es.Indices.GetSettings.WithFlatSettings(true),
		p.es.Indices.GetSettings.WithIgnoreUnavailable(true),
		p.es.Indices.GetSettings.WithAllowNoIndices(true),
		p.es.Indices.GetSettings.WithExpandWildcards("open"),
	)
	if err := esclient.CheckResponse("read raw index blocks", res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed map[string]struct {
		Settings map[string]any `json:"settings"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("read raw index blocks: decode: %w", err)
	}
	out := map[string]string{}
	for idx, v := range parsed {
		for _, name := range writeBlocks {
			if fmt.Sprint(v.Settings[name]) == "true" {
				out[idx] = fmt.Sprintf("cluster_block_exception: index [%s] has %s set; its documents cannot be committed, so none is claimed", idx, name)
				break
			}
		}
	}
	return out, nil
}

// dateFields must be mapped as dates (or not yet mapped) in every raw index:
// the poll sorts on crawled_at. (claimed_at is no longer read: claims are
// rows of the lease table.)
var dateFields = []string{"crawled_at"}

type fieldCapsResponse struct {
	Indices []string `json:"indices"`
	Fields  map[string]map[string]struct {
		Type    string   `json:"type"`
		Indices []string `json:"indices"`
	} `json:"fields"`
	Failures []struct {
		Indices []string             `json:"indices"`
		Failure esclient.ErrorObject `json:"failure"`
	} `json:"failures"`
}

// resolve returns the raw indices matching the pattern, from cache while it
// is younger than IndexRefresh and no index failing for its mapping is due
// for a retry. One _field_caps request both lists the indices and tells each
// one's type of the date fields, so one index with a bad mapping is known
// before it is searched, and the others are searched without it.
func (p *Poller) resolve(ctx context.Context) (*resolution, error) {
	now := p.now()
	p.mu.Lock()
	r := p.res
	fresh := r != nil && now.Sub(r.at) < p.cfg.IndexRefresh && !p.mappingRetryDueLocked(now)
	p.mu.Unlock()
	if fresh {
		return r, nil
	}
	res, err := p.es.FieldCaps(
		p.es.FieldCaps.WithContext(ctx),
		p.es.FieldCaps.WithIndex(p.cfg.IndexPattern),
		p.es.FieldCaps.WithFields(dateFields...),
		p.es.FieldCaps.WithIncludeUnmapped(true),
		p.es.FieldCaps.WithIgnoreUnavailable(true),
		p.es.FieldCaps.WithAllowNoIndices(true),
		p.es.FieldCaps.WithExpandWildcards("open"),
	)
	err = esclient.CheckResponse("list raw indices", res, err)
	p.esOutcome(ctx, err)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed fieldCapsResponse
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("list raw indices: decode: %w", err)
	}
	blocked, err := p.blockedIndices(ctx)
	p.esOutcome(ctx, err)
	if err != nil {
		return nil, err
	}
	r = &resolution{at: now, indices: slices.Sorted(slices.Values(parsed.Indices)), mapping: map[string]string{}, blocked: blocked}
	for _, field := range dateFields {
		for typ, caps := range parsed.Fields[field] {
			if typ == "date" || typ == "date_nanos" || typ == "unmapped" {
				continue
			}
			on := caps.Indices
			if len(on) == 0 { // one type across every index
				on = r.indices
			}
			for _, idx := range on {
				r.mapping[idx] = fmt.Sprintf("%s is mapped as %s, not date: the poll cannot order or lease its documents; fix the index mapping (reindex)", field, typ)
			}
		}
	}
	for _, f := range parsed.Failures {
		for _, idx := range f.Indices {
			r.mapping[idx] = "field capabilities failed: " + f.Failure.String()
			if !slices.Contains(r.indices, idx) {
				r.indices = append(r.indices, idx)
			}
		}
	}
	slices.Sort(r.indices)
	p.adopt(ctx, r)
	return r, nil
}

// mappingRetryDueLocked reports an index failing for its mapping whose retry
// is due: its mapping must be read afresh, not from the cache.
func (p *Poller) mappingRetryDueLocked(now time.Time) bool {
	for _, st := range p.states {
		if st.failing && (st.code == ReasonMapping || st.code == ReasonWriteBlocked) && !now.Before(st.nextRetry) {
			return true
		}
	}
	return false
}

// adopt installs a fresh resolution: indices seen for the first time start
// healthy (their gauge at 0), indices gone from the pattern are forgotten.
func (p *Poller) adopt(ctx context.Context, r *resolution) {
	now := p.now()
	var added, gone []string
	var goneFailing []string
	p.mu.Lock()
	p.res = r
	for _, idx := range r.indices {
		if _, ok := p.states[idx]; !ok {
			p.states[idx] = &indexState{since: now}
			added = append(added, idx)
		}
	}
	for idx, st := range p.states {
		if !slices.Contains(r.indices, idx) {
			delete(p.states, idx)
			delete(p.recent, idx)
			gone = append(gone, idx)
			if st.failing {
				goneFailing = append(goneFailing, idx)
			}
		}
	}
	p.mu.Unlock()
	for _, idx := range added {
		p.metrics.IndexPollFailing.Record(ctx, 0, indexAttr(idx))
	}
	for _, idx := range gone {
		p.metrics.IndexPollFailing.Record(ctx, 0, indexAttr(idx))
	}
	for _, idx := range goneFailing {
		p.logger.InfoContext(ctx, "failing raw index no longer matches the index pattern; forgotten", "index", idx)
	}
}

// invalidate makes the next poll resolve the indices again.
func (p *Poller) invalidate() {
	p.mu.Lock()
	p.res = nil
	p.mu.Unlock()
}

// due returns the indices to poll now: those not failing, and failing ones
// whose retry time has come. An index due whose mapping is bad is marked
// failing again instead.
func (p *Poller) due(ctx context.Context, r *resolution) []string {
	now := p.now()
	out := make([]string, 0, len(r.indices))
	var badMapping, blocked []string
	p.mu.Lock()
	for _, idx := range r.indices {
		st := p.states[idx]
		if st != nil && st.failing && now.Before(st.nextRetry) {
			continue
		}
		if _, bad := r.mapping[idx]; bad {
			badMapping = append(badMapping, idx)
			continue
		}
		if _, bad := r.blocked[idx]; bad {
			blocked = append(blocked, idx)
			continue
		}
		out = append(out, idx)
	}
	p.mu.Unlock()
	for _, idx := range badMapping {
		p.markFailing(ctx, idx, ReasonMapping, r.mapping[idx])
	}
	for _, idx := range blocked {
		p.markFailing(ctx, idx, ReasonWriteBlocked, r.blocked[idx])
	}
	return out
}

// backoff is the wait after the n-th consecutive failure of an index:
// IndexRetry doubling up to IndexRetryMax.
func (p *Poller) backoff(n int) time.Duration {
	wait := p.cfg.IndexRetry
	for i := 1; i < n && wait < p.cfg.IndexRetryMax; i++ {
		wait *= 2
	}
	return min(wait, p.cfg.IndexRetryMax)
}

// markFailing records a failed poll of index: it is skipped until its
// backoff has passed. The first failure (and a change of reason) is logged
// at warning; every failure is counted.
func (p *Poller) markFailing(ctx context.Context, index, code, reason string) {
	now := p.now()
	p.mu.Lock()
	st := p.stateLocked(index, now)
	st.failures++
	wait := p.backoff(st.failures)
	wasFailing, oldReason := st.failing, st.reason
	if !st.failing {
		st.failing, st.since = true, now
	}
	st.code, st.reason, st.nextRetry = code, reason, now.Add(wait)
	failures := st.failures
	p.mu.Unlock()

	p.metrics.IndexPollFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("index", index), attribute.String("reason", code)))
	p.metrics.IndexPollFailing.Record(ctx, 1, indexAttr(index))
	switch {
	case !wasFailing:
		p.logger.WarnContext(ctx, "raw index failing: skipping it, the other indices keep flowing",
			"index", index, "reason_code", code, "reason", reason, "retry_in", wait.String())
	case reason != oldReason:
		p.logger.WarnContext(ctx, "raw index still failing, for another reason",
			"index", index, "reason_code", code, "reason", reason, "failures", failures, "retry_in", wait.String())
	default:
		p.logger.DebugContext(ctx, "raw index still failing", "index", index, "reason_code", code, "failures", failures, "retry_in", wait.String())
	}
}

// markHealthy records a good poll of index; a failing index recovers.
func (p *Poller) markHealthy(ctx context.Context, index string) {
	now := p.now()
	p.mu.Lock()
	st := p.stateLocked(index, now)
	if !st.failing {
		p.mu.Unlock()
		return
	}
	failedFor, failures, code := now.Sub(st.since), st.failures, st.code
	*st = indexState{since: now}
	p.mu.Unlock()
	p.metrics.IndexPollFailing.Record(ctx, 0, indexAttr(index))
	p.logger.InfoContext(ctx, "raw index recovered: polling it again", "index", index,
		"was", code, "failed_for", failedFor.Round(time.Millisecond).String(), "failures", failures)
}

func (p *Poller) stateLocked(index string, now time.Time) *indexState {
	st, ok := p.states[index]
	if !ok {
		st = &indexState{since: now}
		p.states[index] = st
	}
	return st
}

// IndexStatus returns the poll state of every raw index matching the
// pattern, by name, as of this replica's last poll; empty before the first.
// It is safe for concurrent use.
func (p *Poller) IndexStatus() []IndexStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]IndexStatus, 0, len(p.states))
	for idx, st := range p.states {
		s := IndexStatus{Index: idx, Failing: st.failing, Since: st.since, Failures: st.failures}
		if st.failing {
			s.ReasonCode, s.Reason, s.NextRetry = st.code, st.reason, st.nextRetry
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b IndexStatus) int { return strings.Compare(a.Index, b.Index) })
	return out
}

func indexAttr(index string) metric.RecordOption {
	return metric.WithAttributes(attribute.String("index", index))
}
