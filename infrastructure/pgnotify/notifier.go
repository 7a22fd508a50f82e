// Package pgnotify turns Postgres LISTEN/NOTIFY into wake-ups for a
// component that also polls: the publisher waking on outbox inserts, the
// classifier reloading rules when they change. A Notifier keeps one
// dedicated connection listening on its channels, reconnects on its own,
// and coalesces the notifications that arrive while its consumer is busy
// into one Wakeup, so a burst of inserts never queues up wake-ups and never
// blocks the connection.
//
// Notifications are a shortcut, not a guarantee: one sent while the
// connection is down is lost. After a reconnect the Notifier delivers a
// Wakeup with Reconnected set, and consumers keep a fallback poll.
package pgnotify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of Config.
const (
	MinReconnectDefault = 100 * time.Millisecond
	MaxReconnectDefault = 10 * time.Second
	NameDefault         = "pg_notifier"
)

// Config configures a Notifier.
type Config struct {
	// URL is the connection string of the dedicated LISTEN connection.
	// Required.
	URL string
	// Channels are the channels to LISTEN on. At least one is required.
	Channels []string
	// MinReconnect is the first wait before reconnecting a lost
	// connection; it doubles up to MaxReconnect. Defaults to
	// MinReconnectDefault.
	MinReconnect time.Duration
	// MaxReconnect caps the wait between reconnection attempts. Defaults
	// to MaxReconnectDefault.
	MaxReconnect time.Duration
	// Debounce is how long the Notifier waits after a notification,
	// gathering more into the same Wakeup, before delivering it. Zero (the
	// default) delivers at once; notifications that arrive while the
	// consumer is busy are coalesced anyway.
	Debounce time.Duration
	// Name is the component name in logs. Defaults to NameDefault.
	Name string
	// Logger records connection events. Required.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	c.MinReconnect = config.PositiveOr(c.MinReconnect, MinReconnectDefault)
	c.MaxReconnect = config.PositiveOr(c.MaxReconnect, MaxReconnectDefault)
	if c.MaxReconnect < c.MinReconnect {
		c.MaxReconnect = c.MinReconnect
	}
	if c.Debounce < 0 {
		c.Debounce = 0
	}
	if c.Name == "" {
		c.Name = NameDefault
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("URL is required"))
	}
	if len(c.Channels) == 0 {
		errs = append(errs, errors.New("Channels needs at least one channel"))
	}
	for i, ch := range c.Channels {
		if ch == "" || slices.Contains(c.Channels[:i], ch) {
			errs = append(errs, fmt.Errorf("Channels[%d] %q is empty or repeated", i, ch))
		}
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("Logger is required"))
	}
	return errors.Join(errs...)
}

// Wakeup is one or more notifications, coalesced.
type Wakeup struct {
	// Payloads holds, for each channel that notified since the last
	// Wakeup, the payload of its latest notification.
	Payloads map[string]string
	// Notifications is how many notifications were coalesced into this
	// Wakeup.
	Notifications int
	// Reconnected means the connection was lost and is back: notifications
	// sent meanwhile were missed, so the consumer should look for itself.
	Reconnected bool
}

// merge adds a notification (nil: a reconnect) to w.
func (w *Wakeup) merge(n *pq.Notification) {
	if n == nil {
		w.Reconnected = true
		return
	}
	if w.Payloads == nil {
		w.Payloads = map[string]string{}
	}
	w.Payloads[n.Channel] = n.Extra
	w.Notifications++
}

// Notifier listens on Postgres channels and delivers coalesced wake-ups on
// C. It is a lifecycle component: Start opens the connection (without
// waiting for it; see Listening), Stop closes it and ends the goroutines
// the Notifier owns. Both are idempotent, and Stop is safe before Start.
type Notifier struct {
	cfg    Config
	logger *slog.Logger
	c      chan Wakeup
	// listening is closed once LISTEN is in place on every channel.
	listening chan struct{}

	base lifecycle.Base
	mu   sync.Mutex
	l    *pq.Listener
}

// New returns a Notifier; call Start to listen.
func New(cfg Config) (*Notifier, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new pg notifier: %w", err)
	}
	cfg.Channels = slices.Clone(cfg.Channels)
	return &Notifier{cfg: cfg, logger: cfg.Logger.With(slog.String("component", cfg.Name)),
		c: make(chan Wakeup), listening: make(chan struct{})}, nil
}

// C delivers the wake-ups. A Wakeup waits there until the consumer takes
// it, gathering the notifications that arrive meanwhile; the channel is
// never closed.
func (n *Notifier) C() <-chan Wakeup { return n.c }

// Listening returns a channel closed once LISTEN is in place on every
// channel. A consumer that must not miss a change made right after its
// start waits on it, for a bounded time: LISTEN waits for the connection,
// and the fallback poll covers the gap.
func (n *Notifier) Listening() <-chan struct{} { return n.listening }

// Start opens the LISTEN connection and returns without waiting for it.
// ctx is used for logging only.
func (n *Notifier) Start(ctx context.Context) error {
	err := n.base.StartFunc(ctx, func(run context.Context) error {
		l := pq.NewListener(n.cfg.URL, n.cfg.MinReconnect, n.cfg.MaxReconnect, n.event)
		n.mu.Lock()
		n.l = l
		n.mu.Unlock()
		n.base.Go(func() { n.listen(run, l) })
		n.base.Go(func() { n.forward(run, l.NotificationChannel()) })
		n.logger.InfoContext(ctx, "pg notifier started", slog.Any("channels", n.cfg.Channels),
			slog.Duration("debounce", n.cfg.Debounce))
		return nil
	})
	if err != nil {
		return fmt.Errorf("start %s: %w", n.cfg.Name, err)
	}
	return nil
}

// Stop closes the connection and waits, bounded by ctx, for the Notifier's
// goroutines to end.
func (n *Notifier) Stop(ctx context.Context) error {
	done, stopping := n.base.StopInit()
	if stopping {
		if l := n.listener(); l != nil {
			// Close unblocks a Listen still waiting for the connection.
			_ = l.Close()
		}
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", n.cfg.Name, ctx.Err())
	}
}

func (n *Notifier) listener() *pq.Listener {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.l
}

// Ping checks, bounded by ctx, that the LISTEN connection is up: an error
// means notifications are not arriving now (consumers fall back to their
// polls).
func (n *Notifier) Ping(ctx context.Context) error {
	l := n.listener()
	if l == nil {
		return fmt.Errorf("ping %s: not started", n.cfg.Name)
	}
	res := make(chan error, 1)
	if !n.base.Go(func() { res <- l.Ping() }) {
		return fmt.Errorf("ping %s: stopped", n.cfg.Name)
	}
	select {
	case err := <-res:
		if err != nil {
			return fmt.Errorf("ping %s: %w", n.cfg.Name, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ping %s: %w", n.cfg.Name, ctx.Err())
	}
}

// listen issues LISTEN on every channel. pq's Listen blocks until the
// connection is up (it reconnects by itself), so it runs apart from the
// forwarding of notifications; Close releases it.
func (n *Notifier) listen(ctx context.Context, l *pq.Listener) {
	for _, ch := range n.cfg.Channels {
		if err := l.Listen(ch); err != nil {
			if ctx.Err() == nil {
				n.logger.ErrorContext(ctx, "LISTEN failed; consumers rely on polling",
					slog.String("channel", ch), slog.Any("error", err))
			}
			return
		}
	}
	close(n.listening)
	n.logger.DebugContext(ctx, "listening", slog.Any("channels", n.cfg.Channels))
}

// event logs the connection's state changes: a lost connection is a
// warning (consumers poll meanwhile), its return an info line.
func (n *Notifier) event(ev pq.ListenerEventType, err error) {
	switch ev {
	case pq.ListenerEventConnected:
		n.logger.Debug("LISTEN connection up", slog.Any("channels", n.cfg.Channels))
	case pq.ListenerEventReconnected:
		n.logger.Info("LISTEN connection back; waking consumers in case notifications were missed",
			slog.Any("channels", n.cfg.Channels))
	default:
		n.logger.Warn("LISTEN connection problem; consumers rely on polling until it is back",
			slog.String("event", ev.String()), slog.Any("channels", n.cfg.Channels), slog.Any("error", err))
	}
}

// forward moves notifications from the connection to C. It always reads
// the connection (pq blocks the connection when its buffer is full) and
// keeps at most one pending Wakeup, into which it merges what arrives until
// the consumer takes it and, with a Debounce, until the Debounce has passed
// since the first notification of the Wakeup.
func (n *Notifier) forward(ctx context.Context, notify <-chan *pq.Notification) {
	var pending *Wakeup
	var debounce *time.Timer
	var debounced <-chan time.Time
	defer func() {
		if debounce != nil {
			debounce.Stop()
		}
	}()
	for {
		var out chan Wakeup
		if pending != nil && debounced == nil {
			out = n.c
		}
		var next Wakeup
		if pending != nil {
			next = *pending
		}
		select {
		case <-ctx.Done():
			return
		case nt, ok := <-notify:
			if !ok {
				return
			}
			if pending == nil {
				pending = &Wakeup{}
				if n.cfg.Debounce > 0 {
					debounce = time.NewTimer(n.cfg.Debounce)
					debounced = debounce.C
				}
			}
			pending.merge(nt)
		case <-debounced:
			debounced = nil
		case out <- next:
			pending = nil
		}
	}
}
