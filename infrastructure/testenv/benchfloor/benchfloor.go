// Package benchfloor times, beside a running benchmark, the bare round trips
// that a message or a document cannot avoid on this machine at this moment:
// a Postgres `SELECT 1`, a durable one-row INSERT commit, and a Redis
// PUBLISH to a subscriber's receipt. A benchmark reports their 99th
// percentiles beside its own figures (floor_pg_p99_ms, floor_pg_commit_p99_ms,
// floor_redis_p99_ms), so a figure read on another machine says how much of
// it is the machine's; scripts/bench-compare.sh flags a latency figure that
// is many times its floor.
package benchfloor

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every is how often the probe times each round trip.
const Every = 10 * time.Millisecond

// commitTable is the table the commit probe inserts into; it lives in the
// benchmark's own scratch database.
const commitTable = "bench_floor_commit"

// Probe times the round trips until Report.
type Probe struct {
	stopc               chan struct{}
	done                chan struct{}
	pg, commit, redisRT []time.Duration
	extra               []*extraProbe
}

// extraProbe is a round trip of the benchmark's own (Extra), timed in a
// loop of its own so a slow one does not hold the others back.
type extraProbe struct {
	name  string
	probe func(context.Context) error
	done  chan struct{}
	d     []time.Duration
}

// Extra names a round trip of a benchmark's own, reported as
// floor_<Name>_p99_ms: for example an Elasticsearch write that waits for
// the refresh making it searchable.
type Extra struct {
	Name  string
	Probe func(context.Context) error
}

// Start begins probing db (a scratch database of the benchmark: the probe
// creates a table in it), rdb and each extra, every Every, until Report.
// db or rdb may be nil to leave their floors out.
func Start(tb testing.TB, db *sql.DB, rdb *redis.Client, extra ...Extra) *Probe {
	tb.Helper()
	ctx := context.Background()
	if db != nil {
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+commitTable+` (id BIGSERIAL PRIMARY KEY, at TIMESTAMPTZ NOT NULL DEFAULT NOW())`); err != nil {
			tb.Fatalf("bench floor: %v", err)
		}
	}
	var msgs <-chan *redis.Message
	if rdb != nil {
		sub := rdb.Subscribe(ctx, "bench:floor")
		if _, err := sub.Receive(ctx); err != nil {
			tb.Fatalf("bench floor: subscribe: %v", err)
		}
		tb.Cleanup(func() { _ = sub.Close() })
		msgs = sub.Channel()
	}
	p := &Probe{stopc: make(chan struct{}), done: make(chan struct{})}
	for _, e := range extra {
		x := &extraProbe{name: "floor_" + e.Name + "_p99_ms", probe: e.Probe, done: make(chan struct{})}
		p.extra = append(p.extra, x)
		go p.runExtra(ctx, x)
	}
	go p.run(ctx, db, rdb, msgs)
	tb.Cleanup(p.stop)
	return p
}

func (p *Probe) run(ctx context.Context, db *sql.DB, rdb *redis.Client, msgs <-chan *redis.Message) {
	defer close(p.done)
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for {
		select {
		case <-p.stopc:
			return
		case <-tick.C:
		}
		if db != nil {
			start := time.Now()
			if err := db.QueryRowContext(ctx, `SELECT 1`).Scan(new(int)); err == nil {
				p.pg = append(p.pg, time.Since(start))
			}
			start = time.Now()
			if _, err := db.ExecContext(ctx, `INSERT INTO `+commitTable+` DEFAULT VALUES`); err == nil {
				p.commit = append(p.commit, time.Since(start))
			}
		}
		if rdb != nil {
			start := time.Now()
			if err := rdb.Publish(ctx, "bench:floor", "x").Err(); err != nil {
				continue
			}
			select {
			case <-msgs:
				p.redisRT = append(p.redisRT, time.Since(start))
			case <-time.After(time.Second):
			case <-p.stopc:
				return
			}
		}
	}
}

func (p *Probe) runExtra(ctx context.Context, x *extraProbe) {
	defer close(x.done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.stopc:
			cancel()
		case <-x.done:
		}
	}()
	for {
		start := time.Now()
		if err := x.probe(ctx); err == nil {
			x.d = append(x.d, time.Since(start))
		}
		select {
		case <-p.stopc:
			return
		case <-time.After(Every):
		}
	}
}

func (p *Probe) stop() {
	select {
	case <-p.stopc:
	default:
		close(p.stopc)
	}
	<-p.done
	for _, x := range p.extra {
		<-x.done
	}
}

// Floors stops the probe and returns the 99th percentiles in milliseconds,
// by metric name, and the longest of each (floor_<name>_max_ms: a stall of
// the machine's, a checkpoint's fsync, is one slow round trip of the
// probe's, which its p99 does not show); a round trip that was not probed
// is left out.
func (p *Probe) Floors() map[string]float64 {
	p.stop()
	out := map[string]float64{}
	all := map[string][]time.Duration{"floor_pg_p99_ms": p.pg, "floor_pg_commit_p99_ms": p.commit, "floor_redis_p99_ms": p.redisRT}
	for _, x := range p.extra {
		all[x.name] = x.d
	}
	for name, d := range all {
		if len(d) == 0 {
			continue
		}
		s := slices.Clone(d)
		slices.Sort(s)
		out[name] = float64(s[(len(s)-1)*99/100]) / float64(time.Millisecond)
		out[strings.TrimSuffix(name, "_p99_ms")+"_max_ms"] = float64(s[len(s)-1]) / float64(time.Millisecond)
	}
	return out
}

// Report stops the probe and reports its floors as b's metrics.
func (p *Probe) Report(b *testing.B) {
	for name, v := range p.Floors() {
		b.ReportMetric(v, name)
	}
}
