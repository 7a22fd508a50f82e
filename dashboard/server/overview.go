package server

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Overview summary (GET /api/overview): every card and chart of the
// Overview in one answer, so an idle tab makes one request per refresh
// instead of one per card and chart (46 a minute before, 6 now).
const (
	// overviewCacheTTL: one user's answer for one range is reused for
	// this long (several tabs, a reload), then fetched again.
	overviewCacheTTL = 5 * time.Second
	// overviewCacheMax bounds the answers kept (one per user and range);
	// the oldest goes first.
	overviewCacheMax = 256
	// promLookbackMinSeconds: two of the deployment's 15 s scrapes
	// (dashboard/src/lib/timeRange.ts's LOOKBACK_MIN_SECONDS).
	promLookbackMinSeconds = 30
)

// overviewRange is one of the picker's ranges (timeRange.ts's RANGES):
// every panel of the Overview covers it.
type overviewRange struct {
	seconds int64
	// bucket is the attempts chart's bucket, in seconds: a round time
	// (the ticks fall on round times too), 60 to 96 buckets a range.
	bucket int64
}

// overviewRanges are the picker's ranges by name.
var overviewRanges = map[string]overviewRange{
	"15m": {15 * 60, 15}, "1h": {3600, 60}, "6h": {6 * 3600, 5 * 60},
	"24h": {24 * 3600, 15 * 60}, "7d": {7 * 24 * 3600, 2 * 3600},
}

// sourcePattern is a source name as raw index names allow it (the
// index-manager's prefix): only such a name is put in a PromQL matcher
// or an index name, so none needs escaping.
var sourcePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,179}$`)

// overviewQueries are the Overview's Prometheus queries: the history
// charts' gauges as their peak over each step ($lookback: the whole step)
// and the per-source throughput per minute over the range ($range, $minutes;
// $match narrows to one source). A series younger than the range counts
// whole (as deploy/prometheus/alerts.yml does): its first scrape already
// holds documents, which increase() would not count. A restart that keeps
// the series' labels is a counter reset, which increase() counts across.
// The proxy's allowlist (promql.go) admits them too; its tests send them.
var overviewQueries = struct {
	Queue, DLQ, Outbox, Classified, Published string
}{
	Queue:      "sum(max_over_time(classifier_queue_depth[$lookback]))",
	DLQ:        "sum by (state) (max_over_time(classifier_dlq_backlog[$lookback]))",
	Outbox:     `sum by (status) (max_over_time(classifier_outbox_backlog{status=~"pending|publishing|failed"}[$lookback]))`,
	Classified: "sum by (source) ((classifier_documents_processed_total{$match} unless classifier_documents_processed_total{$match} offset $range) or increase(classifier_documents_processed_total{$match}[$range])) / $minutes",
	Published:  `sum by (source) ((classifier_publications_total{decision=~"first|changed"$andMatch} unless classifier_publications_total{$match} offset $range) or increase(classifier_publications_total{decision=~"first|changed"$andMatch}[$range])) / $minutes`,
}

// clipped is s cut to at most n bytes, for an error message.
func clipped(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// throughputQuery is one of the throughput queries over rng (a key of
// overviewRanges), of source when not empty (a sourcePattern name).
func throughputQuery(q, rng, source string) string {
	match, andMatch := "", ""
	if source != "" {
		match = `source="` + source + `"`
		andMatch = "," + match
	}
	q = strings.NewReplacer("$andMatch", andMatch, "$match", match, "$range", rng,
		"$minutes", strconv.FormatInt(overviewRanges[rng].seconds/60, 10)).Replace(q)
	return strings.ReplaceAll(q, "{}", "")
}

// rangeWindow is timeRange.ts's rangeWindow: a range ending now, about 120
// steps, each step's look-back the whole step (at least 30 s).
func rangeWindow(seconds int64, now time.Time) (start, end, step, lookback int64) {
	step = max(5, int64(math.Round(float64(seconds)/120)))
	end = now.Unix()
	return end - seconds, end, step, max(step, promLookbackMinSeconds)
}

// overviewSummary is the answer of GET /api/overview.
type overviewSummary struct {
	Range string `json:"range"`
	// Source is the source the per-source parts were narrowed to ("" for all).
	Source string `json:"source"`
	// Bucket is the attempts chart's bucket in seconds (stats' interval).
	Bucket      int64     `json:"bucket_seconds"`
	GeneratedAt time.Time `json:"generated_at"`
	// The services' answers, as their own routes give them.
	Stats      part `json:"stats"`      // classifier GET /api/v1/stats over the range (of the source)
	DLQ        part `json:"dlq"`        // classifier GET /api/v1/dlq/stats
	Outbox     part `json:"outbox"`     // publisher GET /api/v1/outbox/stats
	Classified part `json:"classified"` // index-manager GET /api/v1/content/_count (classified over the range, of the source)
	Metrics    part `json:"metrics"`    // {"queue_depth","active_workers"} from the classifier's /metrics
	// Prometheus: {"start","end","step","queue","dlq","outbox"} (matrix
	// results) and {"classified","published"} (vector results).
	History    part `json:"history"`
	Throughput part `json:"throughput"`
}

type overviewHandler struct {
	f      *fanout
	cache  *summaryCache
	logger *slog.Logger
}

func newOverviewHandler(f *fanout, logger *slog.Logger) *overviewHandler {
	return &overviewHandler{f: f, cache: newSummaryCache(overviewCacheTTL, overviewCacheMax), logger: logger}
}

func (h *overviewHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rng := "1h" // when not given; given empty is refused
	if q := r.URL.Query(); q.Has("range") {
		rng = q.Get("range")
	}
	_, ok := overviewRanges[rng]
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_range", "range must be one of 15m, 1h, 6h, 24h, 7d (got "+strconv.Quote(rng)+")")
		return
	}
	// Absent is every source; given, it must be one (given empty is refused).
	source := r.URL.Query().Get("source")
	if r.URL.Query().Has("source") && !sourcePattern.MatchString(source) {
		writeError(w, http.StatusBadRequest, "invalid_source",
			"source must be a source name: lower-case letters, digits, _ and -, at most 180 (got "+strconv.Quote(clipped(source, 64))+")")
		return
	}
	// fresh=1 (a page's first load) is answered from the services, not the
	// cache: a reload right after a service stopped shows it stopped.
	fresh := false
	if q := r.URL.Query(); q.Has("fresh") {
		if q.Get("fresh") != "1" {
			writeError(w, http.StatusBadRequest, "invalid_fresh", "fresh must be 1 (got "+strconv.Quote(q.Get("fresh"))+")")
			return
		}
		fresh = true
	}
	body, err := h.cache.get(r.Context(), userOf(r.Context())+"\x00"+rng+"\x00"+source, fresh, func() []byte {
		// Not the browser's cancellation: the answer may serve other
		// requests; every call is bounded by fanoutCallTimeout.
		s := h.build(context.WithoutCancel(r.Context()), r, rng, source)
		b, _ := json.Marshal(s)
		return b
	})
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "canceled", "the request ended before the summary was ready")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}

func (h *overviewHandler) build(ctx context.Context, r *http.Request, rng, source string) overviewSummary {
	span := overviewRanges[rng]
	s := overviewSummary{Range: rng, Source: source, Bucket: span.bucket, GeneratedAt: time.Now().UTC()}
	f := h.f
	count := url.Values{"index_type": {"classified_content"}, "field": {"classified_at"}, "gte": {"now-" + rng}}
	stats := url.Values{"window": {strconv.FormatInt(span.seconds, 10) + "s"}, "interval": {strconv.FormatInt(span.bucket, 10) + "s"}}
	if source != "" {
		// The source's own classified index (index_type keeps it to one).
		count.Set("prefix", source+"_classified_content")
		stats.Set("source", source)
	}
	pooled(ctx, []func(context.Context){
		func(ctx context.Context) {
			s.Stats = f.get(ctx, r, "classifier", f.classifier, "/api/v1/stats?"+stats.Encode(), true)
		},
		func(ctx context.Context) {
			s.DLQ = f.get(ctx, r, "classifier", f.classifier, "/api/v1/dlq/stats", true)
		},
		func(ctx context.Context) {
			s.Outbox = f.get(ctx, r, "publisher", f.publisher, "/api/v1/outbox/stats", true)
		},
		func(ctx context.Context) {
			s.Classified = f.get(ctx, r, "index-manager", f.indexManager, "/api/v1/content/_count?"+count.Encode(), true)
		},
		func(ctx context.Context) { s.Metrics = h.metrics(ctx, r) },
		func(ctx context.Context) { s.History = h.history(ctx, r, span.seconds) },
		func(ctx context.Context) { s.Throughput = h.throughput(ctx, r, rng, source) },
	})
	return s
}

// metrics sums the classifier's queue depth and active workers from its
// /metrics.
func (h *overviewHandler) metrics(ctx context.Context, r *http.Request) part {
	p := h.f.get(ctx, r, "classifier", h.f.classifier, "/metrics", true)
	if !p.OK {
		return p
	}
	var text string
	if err := json.Unmarshal(p.Data, &text); err != nil {
		return failedPart(http.StatusBadGateway, "upstream_unavailable", "the classifier's metrics could not be read")
	}
	data, _ := json.Marshal(map[string]float64{
		"queue_depth":    sumFamily(text, "classifier_queue_depth"),
		"active_workers": sumFamily(text, "classifier_active_workers"),
	})
	return part{OK: true, Status: http.StatusOK, Data: data}
}

// sumFamily sums the samples of one metric family in Prometheus's text
// format (lib/prometheus.ts's sumMetric).
func sumFamily(text, name string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		rest := line[len(name):]
		if strings.HasPrefix(rest, "{") {
			i := strings.LastIndex(rest, "}")
			if i < 0 {
				continue
			}
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum += v
		}
	}
	return sum
}

// history runs the three history charts' range queries over the range.
func (h *overviewHandler) history(ctx context.Context, r *http.Request, seconds int64) part {
	if h.f.prometheus == "" {
		return failedPart(http.StatusServiceUnavailable, "prometheus_not_configured", "PROMETHEUS_URL is not set: the dashboard has no metrics history")
	}
	start, end, step, lookback := rangeWindow(seconds, time.Now())
	lb := strconv.FormatInt(lookback, 10) + "s"
	out := map[string]any{"start": start, "end": end, "step": step}
	queries := map[string]string{"queue": overviewQueries.Queue, "dlq": overviewQueries.DLQ, "outbox": overviewQueries.Outbox}
	for name, q := range queries {
		v := url.Values{"query": {strings.ReplaceAll(q, "$lookback", lb)}, "start": {strconv.FormatInt(start, 10)},
			"end": {strconv.FormatInt(end, 10)}, "step": {strconv.FormatInt(step, 10)}, "timeout": {promUpstreamTimeout}}
		result, p := h.promResult(ctx, r, "/api/v1/query_range?"+v.Encode())
		if !p.OK {
			return p
		}
		out[name] = result
	}
	data, _ := json.Marshal(out)
	return part{OK: true, Status: http.StatusOK, Data: data}
}

// throughput runs the per-source throughput's two instant queries over
// the range, of one source when given.
func (h *overviewHandler) throughput(ctx context.Context, r *http.Request, rng, source string) part {
	if h.f.prometheus == "" {
		return failedPart(http.StatusServiceUnavailable, "prometheus_not_configured", "PROMETHEUS_URL is not set: the dashboard has no metrics history")
	}
	out := map[string]any{}
	for name, q := range map[string]string{"classified": overviewQueries.Classified, "published": overviewQueries.Published} {
		v := url.Values{"query": {throughputQuery(q, rng, source)}, "timeout": {promUpstreamTimeout}}
		result, p := h.promResult(ctx, r, "/api/v1/query?"+v.Encode())
		if !p.OK {
			return p
		}
		out[name] = result
	}
	data, _ := json.Marshal(out)
	return part{OK: true, Status: http.StatusOK, Data: data}
}

// promResult is data.result of a Prometheus answer.
func (h *overviewHandler) promResult(ctx context.Context, r *http.Request, path string) (json.RawMessage, part) {
	p := h.f.get(ctx, r, "Prometheus", h.f.prometheus, path, false)
	if !p.OK {
		h.logger.WarnContext(ctx, "overview summary: prometheus query failed", "status", p.Status, "error", p.Error.Message)
		return nil, p
	}
	var body struct {
		Data struct {
			Result json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(p.Data, &body); err != nil || body.Data.Result == nil {
		return nil, failedPart(http.StatusBadGateway, "upstream_unavailable", "Prometheus's answer could not be read")
	}
	return body.Data.Result, p
}

// summaryCache keeps each key's answer for ttl, at most max keys (the
// oldest answer goes first). Requests for a key being computed wait for
// that computation instead of starting their own.
type summaryCache struct {
	ttl     time.Duration
	max     int
	mu      sync.Mutex
	entries map[string]*summaryEntry
}

type summaryEntry struct {
	ready chan struct{}
	body  []byte
	at    time.Time
}

func newSummaryCache(ttl time.Duration, maxEntries int) *summaryCache {
	return &summaryCache{ttl: ttl, max: maxEntries, entries: map[string]*summaryEntry{}}
}

// get returns key's answer, computing it with compute when there is none
// younger than ttl (or fresh: none being computed now); the error is ctx's when ctx ends while another
// request's computation is awaited.
func (c *summaryCache) get(ctx context.Context, key string, fresh bool, compute func() []byte) ([]byte, error) {
	c.mu.Lock()
	e := c.entries[key]
	if e != nil && fresh {
		select {
		case <-e.ready: // a finished answer: not reused
			e = nil
		default: // being computed now: as fresh as a new one
		}
	}
	if e != nil {
		select {
		case <-e.ready:
			if time.Since(e.at) > c.ttl {
				e = nil
			}
		default: // being computed: wait for it
		}
	}
	if e != nil {
		c.mu.Unlock()
		select {
		case <-e.ready:
			return e.body, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c.evictLocked()
	e = &summaryEntry{ready: make(chan struct{})}
	c.entries[key] = e
	c.mu.Unlock()
	body := compute()
	c.mu.Lock()
	e.body, e.at = body, time.Now()
	close(e.ready)
	c.mu.Unlock()
	return body, nil
}

// evictLocked makes room for one entry: expired answers go, then the
// oldest finished ones while the cache is full.
func (c *summaryCache) evictLocked() {
	if len(c.entries) < c.max {
		return
	}
	var oldestKey string
	var oldest time.Time
	for k, e := range c.entries {
		select {
		case <-e.ready:
		default:
			continue
		}
		if time.Since(e.at) > c.ttl {
			delete(c.entries, k)
			continue
		}
		if oldestKey == "" || e.at.Before(oldest) {
			oldestKey, oldest = k, e.at
		}
	}
	if len(c.entries) >= c.max && oldestKey != "" {
		delete(c.entries, oldestKey)
	}
}

// len is the number of keys held (tests).
func (c *summaryCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
