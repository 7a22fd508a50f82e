package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// The soak's knobs (scripts/soak.sh sets them): how long it runs, the
// steady arrival rate, and how often a fault is injected. Without
// SOAK_DURATION the soak is the test command's short version: 130 s at 20
// documents a second, a fault every 20 s (each of the six once).
const (
	soakRateDefault       = 100
	soakFaultEveryDefault = 5 * time.Minute
	soakShortDuration     = 130 * time.Second
	soakShortRate         = 20
	soakShortFaultEvery   = 20 * time.Second
	soakSampleEvery       = 10 * time.Second
	// soakFaultWindow is how long after a fault the lag is counted as the
	// fault's, not the steady state's.
	soakFaultWindow = 60 * time.Second
)

// TestSoak runs the pipeline at a steady arrival rate for SOAK_DURATION
// (scripts/soak.sh: `scripts/soak.sh 1h`; without it, the test command's
// 130 s) with a fault every SOAK_FAULT_EVERY, in turn: a classifier
// replica SIGKILLed and started again, the publisher SIGKILLed and started
// again, the Postgres of both services restarted (a private cluster), a
// classifier replica frozen (SIGSTOP) for 20 s, Redis restarted (a private
// server with an append-only file, stopped for 2 s), Elasticsearch
// restarted (a private node, stopped with SIGTERM and started again; the
// loader, as a crawler would, writes again what it did not take). The publisher mirrors
// every message to its channel's stream (PUBLISHER_STREAM_MIRROR), which a
// reader follows beside the pub/sub subscriber: a message published while
// the subscriber was reconnecting after the Redis restart is lost to it,
// as pub/sub drops it, and counts as delivered when it is in the stream. It
// checks that every document written is delivered, with at most 1%
// duplicate messages (a publisher killed between its PUBLISH and its mark
// sends a batch again), and that no process crashed on its own; and it reports, as `soak:` lines and in
// SOAK_REPORT (markdown) when set: delivered/expected, duplicates, the lag
// (raw write acknowledged to Redis receipt) p50/p99/max per window outside
// the fault windows, and every process's RSS and goroutines, the
// databases' connections and table sizes over time, with the slope of
// each after the first tenth of the run (at most its first ten minutes).
// The figures are reported, not asserted: a soak states what a long run
// did on this machine.
//
// Not injected yet: a slow disk or network.
func TestSoak(t *testing.T) {
	t.Parallel()
	duration, rate, faultEvery := soakShortDuration, soakShortRate, soakShortFaultEvery
	if raw := os.Getenv("SOAK_DURATION"); raw != "" {
		var err error
		if duration, err = time.ParseDuration(raw); err != nil || duration < time.Minute {
			t.Fatalf("SOAK_DURATION=%q: want a duration of at least 1m", raw)
		}
		rate, faultEvery = soakRateDefault, soakFaultEveryDefault
	}
	var err error
	if v := os.Getenv("SOAK_RATE"); v != "" {
		if rate, err = strconv.Atoi(v); err != nil || rate < 1 {
			t.Fatalf("SOAK_RATE=%q: want a positive number of documents a second", v)
		}
	}
	if v := os.Getenv("SOAK_FAULT_EVERY"); v != "" {
		if faultEvery, err = time.ParseDuration(v); err != nil || faultEvery < 20*time.Second {
			t.Fatalf("SOAK_FAULT_EVERY=%q: want a duration of at least 20s", v)
		}
	}

	pg := testenv.PrivatePostgres(t)
	st := sharedStack(t)
	st.classifierDB = pg.URL("classifier", "classifier")
	st.publisherDB = pg.URL("publisher", "publisher")
	st.outboxDB = pg.URL("classifier", "publisher")
	// A private node, so its restart stops nothing else.
	node := testenv.PrivateES(t, testenv.ESOptions{Heap: "512m"})
	st.es, st.esURL = node.Client(), node.URL
	sources := []string{st.prefix + "_east", st.prefix + "_west"}
	for _, src := range sources {
		if err := contentindex.CreateIndex(t.Context(), st.es, contentindex.RawIndex(src)); err != nil {
			t.Fatal(err)
		}
	}
	rs := testenv.PrivateRedis(t)
	rdb := rs.Client()
	sub := subscribe(t, rdb, st.prefix)
	mirror := followStreams(t, rdb, st.prefix)
	publisher := launch(t, "publisher", "publisher", st.publisherEnv(map[string]string{"LOG_LEVEL": "warn",
		"REDIS_URL": rs.URL(), "PUBLISHER_STREAM_MIRROR": "true"}))
	replicaEnv := func(id string) map[string]string {
		// The defaults of a running system, but its own databases and
		// indices; a long connect timeout rides out the Postgres restart.
		return map[string]string{
			"CLASSIFIER_DATABASE_URL":        st.classifierDB,
			"CLASSIFIER_OUTBOX_DATABASE_URL": st.outboxDB,
			"ELASTICSEARCH_URL":              st.esURL,
			"CLASSIFIER_INDEX_PATTERN":       st.prefix + "*" + contentindex.RawSuffix,
			"CLASSIFIER_ID":                  id,
			"CONNECT_TIMEOUT":                "5m",
			"LOG_LEVEL":                      "warn",
		}
	}
	replicas := []*svc{
		launch(t, "classifier", "classifier-1", replicaEnv("soak-1-"+st.prefix)),
		launch(t, "classifier", "classifier-2", replicaEnv("soak-2-"+st.prefix)),
	}
	procs := append([]*svc{publisher}, replicas...)

	// The writer: the loader at a steady rate, each write's acknowledgement
	// time read from its output.
	count := int(duration.Seconds()) * rate
	load := exec.Command(binaryB(t, "loader"), "-count", strconv.Itoa(count), "-rate", strconv.Itoa(rate),
		"-sources", strings.Join(sources, ","), "-seed", "29", "-shape", "crawler", "-dup-rate", "0")
	load.Env = append(os.Environ(), "ELASTICSEARCH_URL="+st.esURL)
	stdout, err := load.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var loadErr strings.Builder
	load.Stderr = &loadErr
	written := map[string]time.Time{}
	var writtenMu sync.Mutex
	start := time.Now()
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	loaderDone := make(chan struct{})
	go func() {
		defer close(loaderDone)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			f := strings.Fields(scanner.Text())
			if len(f) != 4 || f[0] != "indexed" {
				continue
			}
			ns, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				continue
			}
			writtenMu.Lock()
			written[docKey(f[1], f[2])] = time.Unix(0, ns)
			writtenMu.Unlock()
		}
	}()

	sampler := startSoakSampler(t, pg.AdminURL(), procs)
	var faults []soakFault
	faultsRun := []func() string{
		func() string {
			replicas[0].Kill()
			replicas[0].Start()
			return "SIGKILL classifier-1, started again"
		},
		func() string {
			publisher.Kill()
			publisher.Start()
			return "SIGKILL publisher, started again"
		},
		func() string {
			pg.Stop()
			time.Sleep(10 * time.Second)
			pg.Start()
			return "Postgres stopped (pg_ctl -m fast) for 10 s, started again"
		},
		func() string {
			replicas[1].Pause()
			time.Sleep(20 * time.Second)
			replicas[1].Resume()
			return "classifier-2 frozen (SIGSTOP) for 20 s"
		},
		func() string {
			rs.Restart(2 * time.Second)
			return "Redis stopped (SIGTERM) for 2 s, started again"
		},
		func() string {
			node.Stop()
			node.Start()
			return "Elasticsearch stopped (SIGTERM), started again"
		},
	}
	for i := 0; ; i++ {
		next := start.Add(time.Duration(i+1) * faultEvery)
		if next.After(start.Add(duration - faultEvery/2)) {
			break
		}
		time.Sleep(time.Until(next))
		at := time.Now()
		what := faultsRun[i%len(faultsRun)]()
		faults = append(faults, soakFault{at: at, what: what})
		t.Logf("%6.0fs fault: %s", at.Sub(start).Seconds(), what)
	}
	// The loader ends on its own once it has written count documents. One
	// that fell behind its schedule (an Elasticsearch restart, writes slower
	// than the rate on a busy machine) gets as long again as the run to catch
	// up, at most 10 minutes, and is then stopped: the soak lasts about what
	// it was asked, what was written is what must be delivered, and the
	// report gives the rate reached.
	loadExit := make(chan error, 1)
	go func() { loadExit <- load.Wait() }()
	loaderStopped := false
	select {
	case err := <-loadExit:
		if err != nil {
			t.Fatalf("loader: %v\n%s", err, loadErr.String())
		}
	case <-time.After(time.Until(start.Add(duration + min(max(duration, time.Minute), 10*time.Minute)))):
		writtenMu.Lock()
		n := len(written)
		writtenMu.Unlock()
		t.Logf("the loader is behind its schedule: stopped %s after the start with %d of %d written", time.Since(start).Round(time.Second), n, count)
		_ = load.Process.Signal(syscall.SIGTERM)
		<-loadExit // the loader's own error for the writes it was stopped in
		loaderStopped = true
	}
	<-loaderDone
	writtenMu.Lock()
	keys := make([]string, 0, len(written))
	for k := range written {
		keys = append(keys, k)
	}
	writtenMu.Unlock()
	// Delivered: received, or in its channel's stream when published while
	// the subscriber was reconnecting.
	var missing []string
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		missing = missing[:0]
		for _, k := range keys {
			if sub.Count(k) == 0 && !mirror.has(k) {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(3 * time.Second) // late duplicates
	samples := sampler.stop()

	report := soakReport(start, duration, rate, written, sub, mirror, faults, samples)
	for _, line := range report.lines {
		fmt.Println("soak: " + line)
	}
	if path := os.Getenv("SOAK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report.markdown), 0o644); err != nil {
			t.Errorf("write %s: %v", path, err)
		}
	}
	if len(keys) != count && !loaderStopped {
		t.Errorf("the loader ended on its own with %d writes acknowledged, want %d", len(keys), count)
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d documents never delivered, e.g. %v", len(missing), len(keys), missing[:min(3, len(missing))])
	}
	if limit := len(keys) / 100; report.duplicates > limit {
		t.Errorf("%d duplicate messages, want at most 1%% (%d)", report.duplicates, limit)
	}
	checkNoCrash(t, procs...)
}

// soakFault is one injected fault.
type soakFault struct {
	at   time.Time
	what string
}

// soakSample is the state of the processes and the databases at one time.
type soakSample struct {
	at         time.Time
	rssMB      map[string]float64 // per process label
	goroutines map[string]float64
	conns      map[string]float64 // per database
	tableMB    map[string]float64 // per database.table
}

// soakSampler samples every soakSampleEvery until stop.
type soakSampler struct {
	stopc   chan struct{}
	done    chan struct{}
	samples []soakSample
}

func startSoakSampler(t *testing.T, adminURL string, procs []*svc) *soakSampler {
	s := &soakSampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(soakSampleEvery)
		defer tick.Stop()
		for {
			s.samples = append(s.samples, sampleSoak(adminURL, procs))
			select {
			case <-s.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *soakSampler) stop() []soakSample {
	select {
	case <-s.stopc:
	default:
		close(s.stopc)
	}
	<-s.done
	return s.samples
}

// sampleSoak reads each process's resident memory (/proc) and goroutines
// (its /metrics), and the databases' connections and table sizes. A
// figure that cannot be read (a process being restarted, Postgres
// stopped) is left out of the sample.
func sampleSoak(adminURL string, procs []*svc) soakSample {
	smp := soakSample{at: time.Now(), rssMB: map[string]float64{}, goroutines: map[string]float64{},
		conns: map[string]float64{}, tableMB: map[string]float64{}}
	for _, p := range procs {
		p.mu.Lock()
		cmd := p.cmd
		p.mu.Unlock()
		if cmd == nil || cmd.Process == nil {
			continue
		}
		if kb, ok := procStatusKB(cmd.Process.Pid, "VmRSS"); ok {
			smp.rssMB[p.label] = kb / 1024
		}
		if code, body := p.get("/metrics"); code == 200 {
			for _, line := range strings.Split(body, "\n") {
				if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
					if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						smp.goroutines[p.label] = n
					}
				}
			}
		}
	}
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return smp
	}
	defer db.Close()
	if rows, err := db.Query(`SELECT datname, COUNT(*) FROM pg_stat_activity WHERE datname IN ('classifier', 'publisher') GROUP BY 1`); err == nil {
		for rows.Next() {
			var name string
			var n float64
			if rows.Scan(&name, &n) == nil {
				smp.conns[name] = n
			}
		}
		rows.Close()
	}
	for _, name := range []string{"classifier", "publisher"} {
		u := strings.Replace(adminURL, "/postgres?", "/"+name+"?", 1)
		d, err := sql.Open("postgres", u)
		if err != nil {
			continue
		}
		if rows, err := d.Query(`SELECT relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'public' AND c.relkind = 'r'`); err == nil {
			for rows.Next() {
				var rel string
				var bytes float64
				if rows.Scan(&rel, &bytes) == nil {
					smp.tableMB[name+"."+rel] = bytes / (1 << 20)
				}
			}
			rows.Close()
		}
		d.Close()
	}
	return smp
}

// procStatusKB reads a kB field of /proc/<pid>/status.
func procStatusKB(pid int, field string) (float64, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return n, err == nil
		}
	}
	return 0, false
}

// soakResult is what soakReport found.
type soakResult struct {
	duplicates int
	lines      []string
	markdown   string
}

// soakReport turns a soak's records into its report.
func soakReport(start time.Time, duration time.Duration, rate int, written map[string]time.Time, sub *subscriber,
	mirror *streamFollower, faults []soakFault, samples []soakSample) soakResult {
	var r soakResult
	var md strings.Builder
	line := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		r.lines = append(r.lines, s)
		md.WriteString("- " + s + "\n")
	}
	total, distinct, duplicates, _ := sub.Stats()
	r.duplicates = duplicates
	fmt.Fprintf(&md, "# Soak of %s at %d documents/s, %d faults\n\n", duration, rate, len(faults))
	onlyInStream := 0
	for k := range written {
		if sub.Count(k) == 0 && mirror.has(k) {
			onlyInStream++
		}
	}
	line("delivered %d of %d written (%d messages, %d duplicates), and %d more only in their channel's stream (published while the subscriber reconnected)",
		distinct, len(written), total, duplicates, onlyInStream)
	var lastWrite time.Time
	for _, at := range written {
		if at.After(lastWrite) {
			lastWrite = at
		}
	}
	if span := lastWrite.Sub(start).Seconds(); span > 0 {
		line("written over %.0f s: %.1f documents/s of the %d asked", span, float64(len(written))/span, rate)
	}

	// The lag per window, outside the fault windows.
	window := min(max(duration/6, time.Minute), 10*time.Minute)
	inFault := func(at time.Time) bool {
		for _, f := range faults {
			if !at.Before(f.at) && at.Before(f.at.Add(soakFaultWindow)) {
				return true
			}
		}
		return false
	}
	lags := map[int][]time.Duration{}
	var steady, all []time.Duration
	sub.mu.Lock()
	for k, at := range written {
		d := sub.byKey[k]
		if d == nil {
			continue
		}
		lag := d.at.Sub(at)
		all = append(all, lag)
		if inFault(at) {
			continue
		}
		steady = append(steady, lag)
		w := int(at.Sub(start) / window)
		lags[w] = append(lags[w], lag)
	}
	sub.mu.Unlock()
	q := func(d []time.Duration, p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))]) / float64(time.Millisecond)
	}
	line("lag outside the fault windows (%s after each): p50 %.0f ms, p99 %.0f ms, max %.0f ms over %d documents; with them: p99 %.0f ms, max %.0f ms",
		soakFaultWindow, q(steady, 0.5), q(steady, 0.99), q(steady, 1), len(steady), q(all, 0.99), q(all, 1))
	md.WriteString("\n| window | documents | lag p50 ms | p99 ms | max ms |\n|---|---|---|---|---|\n")
	windows := slices.Sorted(func(yield func(int) bool) {
		for w := range lags {
			if !yield(w) {
				return
			}
		}
	})
	for _, w := range windows {
		d := lags[w]
		fmt.Fprintf(&md, "| %s-%s | %d | %.0f | %.0f | %.0f |\n", time.Duration(w)*window, time.Duration(w+1)*window, len(d), q(d, 0.5), q(d, 0.99), q(d, 1))
	}
	md.WriteString("\nFaults:\n\n")
	for _, f := range faults {
		fmt.Fprintf(&md, "- %.0f s: %s\n", f.at.Sub(start).Seconds(), f.what)
	}

	// Resources: first, last, and the slope after the warm-up.
	warm := start.Add(min(duration/10, 10*time.Minute))
	series := func(pick func(soakSample) map[string]float64) map[string][][2]float64 {
		out := map[string][][2]float64{}
		for _, s := range samples {
			for k, v := range pick(s) {
				out[k] = append(out[k], [2]float64{s.at.Sub(start).Hours(), v})
			}
		}
		return out
	}
	md.WriteString("\n| figure | first | last | max | slope after warm-up (per hour) |\n|---|---|---|---|---|\n")
	for _, group := range []struct {
		name string
		pick func(soakSample) map[string]float64
	}{
		{"RSS MB", func(s soakSample) map[string]float64 { return s.rssMB }},
		{"goroutines", func(s soakSample) map[string]float64 { return s.goroutines }},
		{"connections", func(s soakSample) map[string]float64 { return s.conns }},
		{"table MB", func(s soakSample) map[string]float64 { return s.tableMB }},
	} {
		byName := series(group.pick)
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range byName {
				if !yield(k) {
					return
				}
			}
		})
		for _, name := range names {
			pts := byName[name]
			first, last, peak := pts[0][1], pts[len(pts)-1][1], 0.0
			for _, p := range pts {
				peak = max(peak, p[1])
			}
			if group.name == "table MB" && peak < 1 {
				continue // the small tables
			}
			slope := slopeAfter(pts, warm.Sub(start).Hours())
			fmt.Fprintf(&md, "| %s %s | %.1f | %.1f | %.1f | %+.2f |\n", group.name, name, first, last, peak, slope)
			r.lines = append(r.lines, fmt.Sprintf("%s %s: first %.1f, last %.1f, max %.1f, slope after warm-up %+.2f per hour",
				group.name, name, first, last, peak, slope))
		}
	}
	r.markdown = md.String()
	return r
}

// slopeAfter is the least-squares slope of the points (hours, value) from
// hour from on; 0 with fewer than three.
func slopeAfter(pts [][2]float64, from float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, p := range pts {
		if p[0] < from {
			continue
		}
		n++
		sx += p[0]
		sy += p[1]
		sxx += p[0] * p[0]
		sxy += p[0] * p[1]
	}
	if n < 3 || n*sxx-sx*sx == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// streamFollower reads the publisher's mirror streams (PUBLISHER_STREAM_MIRROR:
// `stream:<channel>` on one Redis) from their start as they grow, through
// Redis restarts, and remembers the documents under its prefix they hold.
type streamFollower struct {
	mu   sync.Mutex
	seen map[string]bool
}

func followStreams(t *testing.T, rdb *redis.Client, prefix string) *streamFollower {
	f := &streamFollower{seen: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	streams := make([]string, len(publisherChannels))
	last := map[string]string{}
	for i, ch := range publisherChannels {
		streams[i] = "stream:" + ch
		last[streams[i]] = "0"
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			args := slices.Clone(streams)
			for _, s := range streams {
				args = append(args, last[s])
			}
			res, err := rdb.XRead(ctx, &redis.XReadArgs{Streams: args, Count: 1000, Block: time.Second}).Result()
			switch {
			case errors.Is(err, redis.Nil):
				continue
			case err != nil:
				time.Sleep(200 * time.Millisecond) // Redis restarting
				continue
			}
			f.mu.Lock()
			for _, st := range res {
				for _, m := range st.Messages {
					last[st.Stream] = m.ID
					var body message
					if raw, ok := m.Values["message"].(string); ok && json.Unmarshal([]byte(raw), &body) == nil && strings.HasPrefix(body.Source, prefix) {
						f.seen[docKey(body.Source, body.ID)] = true
					}
				}
			}
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return f
}

func (f *streamFollower) has(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[key]
}
