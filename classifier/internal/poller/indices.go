package poller

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/classifier/internal/telemetry"
)

// Reason codes of a failing index: the reason label of
// classifier_index_poll_failures_total and IndexStatus.ReasonCode.
const (
	// ReasonMapping: a field the poll sorts on (crawled_at) is not mapped
	// as a date.
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

// indexState is the watch's record of one raw index; guarded by
// indexWatch.mu.
type indexState struct {
	failing   bool
	code      string
	reason    string
	since     time.Time
	nextRetry time.Time
	failures  int
}

// resolution is the cached answer to "which raw indices match the pattern,
// which incarnation of each, and which of them cannot be polled".
type resolution struct {
	at      time.Time
	indices []string          // sorted
	uuid    map[string]string // index -> index.uuid
	mapping map[string]string // index -> mapping problem
	blocked map[string]string // index -> write block
}

// indexWatch is the poller's job of finding indices: which raw indices
// match the pattern (listed through rawindex, cached for IndexRefresh),
// which of them are failing and when each is retried, which incarnation of
// each the claims belong to, and which indices a poll serves. It is safe
// for concurrent use.
type indexWatch struct {
	cfg     *Config
	metrics *telemetry.Metrics
	logger  *slog.Logger
	now     func() time.Time
	// outcome tells the Elasticsearch breaker how a listing went.
	outcome func(ctx context.Context, err error)
	// replaced is told of an index deleted (uuid empty) or created again
	// under its name (uuid its new one) since the listing before.
	replaced func(ctx context.Context, index, uuid string)

	mu     sync.Mutex // guards the fields below; never held across a request
	res    *resolution
	states map[string]*indexState
	next   int // round-robin start among the indices due
}

// resolve returns the raw indices matching the pattern, from cache while it
// is younger than IndexRefresh and no index failing for its mapping or a
// block is due for a retry, so an index with a bad mapping is known before
// it is searched, and the others are searched without it.
func (w *indexWatch) resolve(ctx context.Context) (*resolution, error) {
	now := w.now()
	w.mu.Lock()
	r := w.res
	fresh := r != nil && now.Sub(r.at) < w.cfg.IndexRefresh && !w.mappingRetryDueLocked(now)
	w.mu.Unlock()
	if fresh {
		return r, nil
	}
	listed, err := w.cfg.Raw.List(ctx, w.cfg.IndexPattern)
	w.outcome(ctx, err)
	if err != nil {
		return nil, err
	}
	r = &resolution{at: now, uuid: map[string]string{}, mapping: map[string]string{}, blocked: map[string]string{}}
	for _, idx := range listed {
		r.indices = append(r.indices, idx.Name)
		r.uuid[idx.Name] = idx.UUID
		if idx.Unusable != "" {
			r.mapping[idx.Name] = idx.Unusable
		}
		if idx.Blocked != "" {
			r.blocked[idx.Name] = idx.Blocked
		}
	}
	w.adopt(ctx, r)
	return r, nil
}

// mappingRetryDueLocked reports an index failing for its mapping whose retry
// is due: its mapping must be read afresh, not from the cache.
func (w *indexWatch) mappingRetryDueLocked(now time.Time) bool {
	for _, st := range w.states {
		if st.failing && (st.code == ReasonMapping || st.code == ReasonWriteBlocked) && !now.Before(st.nextRetry) {
			return true
		}
	}
	return false
}

// adopt installs a fresh resolution: indices seen for the first time start
// healthy (their gauge at 0), indices gone from the pattern are forgotten,
// and an index deleted, or deleted and created again (a new index.uuid), is
// reported to replaced.
func (w *indexWatch) adopt(ctx context.Context, r *resolution) {
	now := w.now()
	var added, gone, goneFailing []string
	replaced := map[string]string{} // index -> its new uuid, "" when deleted
	w.mu.Lock()
	if old := w.res; old != nil {
		for idx, was := range old.uuid {
			if is, ok := r.uuid[idx]; !ok || (was != "" && is != "" && is != was) {
				replaced[idx] = is
			}
		}
	}
	w.res = r
	for _, idx := range r.indices {
		if _, ok := w.states[idx]; !ok {
			w.states[idx] = &indexState{since: now}
			added = append(added, idx)
		}
	}
	for idx, st := range w.states {
		if !slices.Contains(r.indices, idx) {
			delete(w.states, idx)
			gone = append(gone, idx)
			if st.failing {
				goneFailing = append(goneFailing, idx)
			}
		}
	}
	w.mu.Unlock()
	for _, idx := range added {
		w.metrics.IndexPollFailing.Record(ctx, 0, indexAttr(idx))
	}
	for _, idx := range gone {
		w.metrics.IndexPollFailing.Record(ctx, 0, indexAttr(idx))
	}
	for _, idx := range goneFailing {
		w.logger.InfoContext(ctx, "failing raw index no longer matches the index pattern; forgotten", "index", idx)
	}
	for idx, uuid := range replaced {
		w.replaced(ctx, idx, uuid)
	}
}

// invalidate makes the next poll resolve the indices again.
func (w *indexWatch) invalidate() {
	w.mu.Lock()
	w.res = nil
	w.mu.Unlock()
}

// due returns the indices to poll now: those not failing, and failing ones
// whose retry time has come. An index due whose mapping is bad is marked
// failing again instead.
func (w *indexWatch) due(ctx context.Context, r *resolution) []string {
	now := w.now()
	out := make([]string, 0, len(r.indices))
	var badMapping, blocked []string
	w.mu.Lock()
	for _, idx := range r.indices {
		st := w.states[idx]
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
	w.mu.Unlock()
	for _, idx := range badMapping {
		w.markFailing(ctx, idx, ReasonMapping, r.mapping[idx])
	}
	for _, idx := range blocked {
		w.markFailing(ctx, idx, ReasonWriteBlocked, r.blocked[idx])
	}
	return out
}

// backoff is the wait after the n-th consecutive failure of an index:
// IndexRetry doubling up to IndexRetryMax.
func (w *indexWatch) backoff(n int) time.Duration {
	wait := w.cfg.IndexRetry
	for i := 1; i < n && wait < w.cfg.IndexRetryMax; i++ {
		wait *= 2
	}
	return min(wait, w.cfg.IndexRetryMax)
}

// markFailing records a failed poll of index: it is skipped until its
// backoff has passed. The first failure (and a change of reason) is logged
// at warning; every failure is counted.
func (w *indexWatch) markFailing(ctx context.Context, index, code, reason string) {
	now := w.now()
	w.mu.Lock()
	st := w.stateLocked(index, now)
	st.failures++
	wait := w.backoff(st.failures)
	wasFailing, oldReason := st.failing, st.reason
	if !st.failing {
		st.failing, st.since = true, now
	}
	st.code, st.reason, st.nextRetry = code, reason, now.Add(wait)
	failures := st.failures
	w.mu.Unlock()

	w.metrics.IndexPollFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("index", index), attribute.String("reason", code)))
	w.metrics.IndexPollFailing.Record(ctx, 1, indexAttr(index))
	switch {
	case !wasFailing:
		w.logger.WarnContext(ctx, "raw index failing: skipping it, the other indices keep flowing",
			"index", index, "reason_code", code, "reason", reason, "retry_in", wait.String())
	case reason != oldReason:
		w.logger.WarnContext(ctx, "raw index still failing, for another reason",
			"index", index, "reason_code", code, "reason", reason, "failures", failures, "retry_in", wait.String())
	default:
		w.logger.DebugContext(ctx, "raw index still failing", "index", index, "reason_code", code, "failures", failures, "retry_in", wait.String())
	}
}

// markHealthy records a good poll of index; a failing index recovers.
func (w *indexWatch) markHealthy(ctx context.Context, index string) {
	now := w.now()
	w.mu.Lock()
	st := w.stateLocked(index, now)
	if !st.failing {
		w.mu.Unlock()
		return
	}
	failedFor, failures, code := now.Sub(st.since), st.failures, st.code
	*st = indexState{since: now}
	w.mu.Unlock()
	w.metrics.IndexPollFailing.Record(ctx, 0, indexAttr(index))
	w.logger.InfoContext(ctx, "raw index recovered: polling it again", "index", index,
		"was", code, "failed_for", failedFor.Round(time.Millisecond).String(), "failures", failures)
}

func (w *indexWatch) stateLocked(index string, now time.Time) *indexState {
	st, ok := w.states[index]
	if !ok {
		st = &indexState{since: now}
		w.states[index] = st
	}
	return st
}

// IndexStatus returns the poll state of every raw index matching the
// pattern, by name, as of this replica's last poll; empty before the first.
// It is safe for concurrent use.
func (w *indexWatch) status() []IndexStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]IndexStatus, 0, len(w.states))
	for idx, st := range w.states {
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

// window returns at most size of the due indices, starting at a position
// that moves on every poll, so that with more indices than the batch every
// index gets its turn, and the index served first changes.
func (w *indexWatch) window(due []string, size int) []string {
	if len(due) == 0 {
		return nil
	}
	w.mu.Lock()
	start := w.next % len(due)
	n := min(len(due), size)
	if n < len(due) {
		w.next = start + n
	} else {
		w.next = start + 1
	}
	w.mu.Unlock()
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, due[(start+i)%len(due)])
	}
	return out
}
