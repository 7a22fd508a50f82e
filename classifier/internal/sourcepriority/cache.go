package sourcepriority

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// CacheRefreshDefault is how often a Cache reads the marks again.
const CacheRefreshDefault = 10 * time.Second

// Cache keeps the sources' marks in memory for the poller, which
// asks on every poll: a mark takes effect within one refresh. When a read
// fails the last good list stays.
type Cache struct {
	loop  lifecycle.Loop
	marks atomic.Pointer[map[string]Priority]
}

// NewCache returns a cache over store refreshed every interval (default
// CacheRefreshDefault); Start runs it.
func NewCache(store *Store, interval time.Duration, logger *slog.Logger) *Cache {
	interval = config.PositiveOr(interval, CacheRefreshDefault)
	c := &Cache{}
	c.marks.Store(&map[string]Priority{})
	c.loop = lifecycle.Loop{Name: "source_priority_cache", Logger: logger, Step: func(ctx context.Context) time.Duration {
		marks, err := store.List(ctx)
		if err != nil {
			logger.WarnContext(ctx, "source priorities not refreshed; the last ones stay", "error", err)
			return interval
		}
		c.marks.Store(&marks)
		return interval
	}}
	return c
}

// Start begins refreshing; the first read happens at once.
func (c *Cache) Start(ctx context.Context) error { return c.loop.Start(ctx) }

// Stop ends the refreshing.
func (c *Cache) Stop(ctx context.Context) error { return c.loop.Stop(ctx) }

// Level returns source's priority level (the poller's
// Config.SourcePriority): its mark, or normal.
func (c *Cache) Level(source string) string {
	if p, ok := (*c.marks.Load())[source]; ok {
		return string(p)
	}
	return string(Normal)
}

// IsLow reports whether source is marked low or cleanup: below normal.
func (c *Cache) IsLow(source string) bool { return contentindex.PriorityBelowNormal(c.Level(source)) }
