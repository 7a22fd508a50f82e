package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/redisclient"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Defaults of the live tail's settings (Config.Live*).
const (
	// LiveMaxStreamsDefault caps the live-tail streams open at once; more
	// get 429.
	LiveMaxStreamsDefault = 8
	// LiveBufferDefault is the number of messages a stream holds for a
	// reader that has fallen behind; beyond it messages are dropped (and
	// counted to the reader), never waited for.
	LiveBufferDefault = 256
	// LiveMaxDurationDefault ends a stream after this long (with an "end"
	// event); the view opens a new one.
	LiveMaxDurationDefault = 30 * time.Minute
	// LiveHeartbeatDefault is the interval of the comment line that keeps
	// proxies from closing a quiet stream.
	LiveHeartbeatDefault = 15 * time.Second
	// LiveWriteTimeoutDefault bounds one write to a stream: a reader that
	// accepts nothing for this long is disconnected.
	LiveWriteTimeoutDefault = 30 * time.Second
	// LiveMinRoleDefault is the least role that may open the live tail.
	LiveMinRoleDefault = auth.RoleViewer
	// liveSubscribeWait bounds a stream's wait for the Redis subscription
	// (503 beyond).
	liveSubscribeWait = 10 * time.Second
)

// LiveChannels are the publisher's channel patterns the live tail
// subscribes to (docs/architecture.md, "Channels and the message").
func LiveChannels() []string { return []string{"articles:*", "content:*"} }

// liveMessage is one message published on a channel, as the live tail
// sends it (the fields of the publisher's message that identify it).
type liveMessage struct {
	Channel       string   `json:"channel"`
	ID            string   `json:"id"`
	Index         string   `json:"index,omitempty"`
	Title         string   `json:"title"`
	Source        string   `json:"source"`
	Topics        []string `json:"topics"`
	ContentType   string   `json:"content_type,omitempty"`
	URL           string   `json:"url,omitempty"`
	PublishedDate string   `json:"published_date,omitempty"`
	PublishedAt   string   `json:"published_at,omitempty"`
	Version       int64    `json:"version,omitempty"`
	Body          *string  `json:"body,omitempty"`
}

// parseLiveMessage reads the publisher's message JSON. A payload that is
// not that JSON still reaches the tail with its channel (and no fields).
func parseLiveMessage(channel, payload string) liveMessage {
	var raw struct {
		ID            string   `json:"id"`
		Index         string   `json:"index"`
		Title         string   `json:"title"`
		Source        string   `json:"source"`
		Topics        []string `json:"topics"`
		ContentType   string   `json:"content_type"`
		URL           string   `json:"url"`
		PublishedDate string   `json:"published_date"`
		Version       int64    `json:"version"`
		Body          *string  `json:"body"`
		Publisher     struct {
			PublishedAt string `json:"published_at"`
		} `json:"publisher"`
	}
	_ = json.Unmarshal([]byte(payload), &raw)
	topics := raw.Topics
	if topics == nil {
		topics = []string{}
	}
	return liveMessage{
		Channel: channel, ID: raw.ID, Index: raw.Index, Title: raw.Title, Source: raw.Source, Topics: topics,
		ContentType: raw.ContentType, URL: raw.URL, PublishedDate: raw.PublishedDate,
		PublishedAt: raw.Publisher.PublishedAt, Version: raw.Version, Body: raw.Body,
	}
}

// liveStream is one open stream's queue: the hub never waits for it.
type liveStream struct {
	ch      chan liveMessage
	dropped atomic.Int64
}

// liveHub owns the one Redis subscription every stream shares: started by
// the first stream, stopped by Close. Fan-out never blocks: a stream whose
// buffer is full loses the message and counts it.
type liveHub struct {
	redisURL string
	channels []string
	maxSubs  int
	buffer   int
	logger   *slog.Logger
	// dropped counts the messages a full buffer lost, over every stream
	// (dashboard_live_messages_dropped_total).
	dropped prometheus.Counter

	mu         sync.Mutex
	streams    map[*liveStream]struct{}
	started    bool
	closed     bool
	cancel     context.CancelFunc
	done       chan struct{} // closed when the subscription goroutine has returned
	closing    chan struct{} // closed by Close: streams end
	subscribed chan struct{} // closed once Redis has confirmed the subscription
}

func newLiveHub(cfg Config, logger *slog.Logger, dropped prometheus.Counter) *liveHub {
	if len(cfg.LiveChannels) == 0 {
		cfg.LiveChannels = LiveChannels()
	}
	return &liveHub{
		redisURL: cfg.RedisURL, channels: cfg.LiveChannels, maxSubs: cfg.LiveMaxStreams, buffer: cfg.LiveBuffer,
		logger: logger.With("component", "live_tail"), dropped: dropped, streams: map[*liveStream]struct{}{},
		done: make(chan struct{}), closing: make(chan struct{}), subscribed: make(chan struct{}),
	}
}

var (
	errLiveBusy   = errors.New("live tail: too many streams")
	errLiveClosed = errors.New("live tail: server stopping")
)

// join registers a stream, starting the subscription on first use.
func (h *liveHub) join() (*liveStream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errLiveClosed
	}
	if len(h.streams) >= h.maxSubs {
		return nil, errLiveBusy
	}
	if !h.started {
		opts, err := redis.ParseURL(h.redisURL)
		if err != nil {
			return nil, fmt.Errorf("live tail: DASHBOARD_REDIS_URL: %w", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel, h.started = cancel, true
		go h.run(ctx, redis.NewClient(opts))
	}
	s := &liveStream{ch: make(chan liveMessage, h.buffer)}
	h.streams[s] = struct{}{}
	return s, nil
}

// open is the number of streams open now.
func (h *liveHub) open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams)
}

func (h *liveHub) leave(s *liveStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.streams, s)
}

// run holds the subscription until ctx ends: it waits for Redis to
// confirm it (retrying every second while Redis does not answer), then
// fans out every message. go-redis resubscribes after a lost connection by
// itself (messages published meanwhile are not seen).
func (h *liveHub) run(ctx context.Context, client *redis.Client) {
	defer close(h.done)
	defer client.Close()
	sub := client.PSubscribe(ctx, h.channels...)
	defer sub.Close()
	for {
		_, err := sub.Receive(ctx)
		if err == nil {
			break
		}
		h.logger.WarnContext(ctx, "live tail: Redis does not answer; retrying", "redis", redisclient.Redact(h.redisURL), "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	close(h.subscribed)
	h.logger.InfoContext(ctx, "live tail subscribed", "channels", h.channels, "redis", redisclient.Redact(h.redisURL))
	msgs := sub.Channel(redis.WithChannelHealthCheckInterval(30 * time.Second))
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			h.fanOut(parseLiveMessage(m.Channel, m.Payload))
		}
	}
}

func (h *liveHub) fanOut(m liveMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.streams {
		select {
		case s.ch <- m:
		default:
			s.dropped.Add(1)
			h.dropped.Inc()
		}
	}
}

// Close ends every stream and the subscription, and waits for its
// goroutine. Safe to call more than once and before any stream.
func (h *liveHub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.closing)
	started := h.started
	if started {
		h.cancel()
	}
	h.mu.Unlock()
	if started {
		<-h.done
	}
}

// liveHandler serves GET /api/live: server-sent events of every message
// the publisher sends on articles:* and content:*.
type liveHandler struct {
	hub          *liveHub
	authn        *auth.Authenticator
	features     FeatureSet
	minRole      auth.Role
	maxDuration  time.Duration
	heartbeat    time.Duration
	writeTimeout time.Duration
	meURL        string
	client       *http.Client
	logger       *slog.Logger
	metrics      *metrics
}

func (l *liveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed: this route is read-only (GET)")
		return
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	var claims *auth.Claims
	if ok && strings.EqualFold(scheme, "Bearer") {
		claims, _ = l.authn.Verify(strings.TrimSpace(token))
	}
	if claims == nil {
		l.metrics.liveRefused.WithLabelValues(refusedAuth).Inc()
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required (log in to the dashboard)")
		return
	}
	if !l.features.Enabled(FeatureLiveTail) {
		l.metrics.liveRefused.WithLabelValues(refusedFeature).Inc()
		featureDisabled(w, FeatureLiveTail)
		return
	}
	if !claims.Role.Allows(l.minRole) {
		l.metrics.liveRefused.WithLabelValues(refusedRole).Inc()
		writeError(w, http.StatusForbidden, "forbidden",
			fmt.Sprintf("GET /api/live needs the %s role (DASHBOARD_LIVE_MIN_ROLE); this token has the %s role", l.minRole, claims.Role))
		return
	}
	if l.hub.redisURL == "" {
		l.metrics.liveRefused.WithLabelValues(refusedUnavailable).Inc()
		writeError(w, http.StatusServiceUnavailable, "live_tail_not_configured", "DASHBOARD_REDIS_URL is not set: the dashboard has no live tail")
		return
	}
	stream, err := l.hub.join()
	switch {
	case errors.Is(err, errLiveBusy):
		l.metrics.liveRefused.WithLabelValues(refusedCap).Inc()
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, "too_many_requests",
			fmt.Sprintf("at most %d live-tail streams are open at a time (DASHBOARD_LIVE_MAX_STREAMS); try again shortly", l.hub.maxSubs))
		return
	case errors.Is(err, errLiveClosed):
		l.metrics.liveRefused.WithLabelValues(refusedUnavailable).Inc()
		writeError(w, http.StatusServiceUnavailable, "stopping", "the dashboard server is stopping")
		return
	case err != nil:
		l.metrics.liveRefused.WithLabelValues(refusedUnavailable).Inc()
		l.logger.ErrorContext(r.Context(), "live tail unavailable", "error", err)
		writeError(w, http.StatusServiceUnavailable, "live_tail_unavailable", err.Error())
		return
	}
	defer l.hub.leave(stream)
	// Wait for the subscription, so "ready" means every message published
	// from now on reaches the stream.
	wait := time.NewTimer(liveSubscribeWait)
	defer wait.Stop()
	select {
	case <-l.hub.subscribed:
	case <-r.Context().Done():
		return
	case <-l.hub.closing:
		l.metrics.liveRefused.WithLabelValues(refusedUnavailable).Inc()
		writeError(w, http.StatusServiceUnavailable, "stopping", "the dashboard server is stopping")
		return
	case <-wait.C:
		l.metrics.liveRefused.WithLabelValues(refusedUnavailable).Inc()
		writeError(w, http.StatusServiceUnavailable, "live_tail_unavailable",
			fmt.Sprintf("Redis (DASHBOARD_REDIS_URL) did not confirm the subscription within %s", liveSubscribeWait))
		return
	}
	readsBodies := l.readsBodies(r)
	l.stream(w, r, stream, readsBodies)
}

// readsBodies asks the index-manager (GET /api/v1/auth/me with the caller's
// token) whether the caller may read message bodies; when it cannot say,
// bodies are left out.
func (l *liveHandler) readsBodies(r *http.Request) bool {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.meURL, nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", r.Header.Get("Authorization"))
	res, err := l.client.Do(req)
	if err != nil {
		l.logger.WarnContext(r.Context(), "live tail: auth/me unavailable, bodies left out", "error", err)
		return false
	}
	defer res.Body.Close()
	var me struct {
		ReadsBodies bool `json:"reads_bodies"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&me) != nil {
		l.logger.WarnContext(r.Context(), "live tail: auth/me refused, bodies left out", "status", res.StatusCode)
		return false
	}
	return me.ReadsBodies
}

// stream writes the events until the client leaves, the maximum duration
// passes, a write stalls or the server stops.
func (l *liveHandler) stream(w http.ResponseWriter, r *http.Request, s *liveStream, readsBodies bool) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(text string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(l.writeTimeout))
		if _, err := w.Write([]byte(text)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	event := func(name string, v any) bool {
		data, _ := json.Marshal(v)
		return write("event: " + name + "\ndata: " + string(data) + "\n\n")
	}
	if !event("ready", map[string]any{
		"channels": l.hub.channels, "reads_bodies": readsBodies, "buffer": cap(s.ch),
		"max_duration_seconds": int(l.maxDuration.Seconds()),
	}) {
		return
	}
	heartbeat := time.NewTicker(l.heartbeat)
	defer heartbeat.Stop()
	deadline := time.NewTimer(l.maxDuration)
	defer deadline.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-l.hub.closing:
			event("end", map[string]string{"reason": "server_stopping"})
			return
		case <-deadline.C:
			event("end", map[string]string{"reason": "max_duration"})
			return
		case <-heartbeat.C:
			if n := s.dropped.Swap(0); n > 0 && !event("dropped", map[string]int64{"dropped": n}) {
				return
			}
			if !write(": heartbeat\n\n") {
				return
			}
		case m := <-s.ch:
			if n := s.dropped.Swap(0); n > 0 {
				if !event("dropped", map[string]int64{"dropped": n}) {
					return
				}
			}
			if !readsBodies {
				m.Body = nil
			}
			if !event("message", m) {
				return
			}
			l.metrics.liveSent.Inc()
		}
	}
}
