package worker_test

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cpuMeter measures the CPU time a benchmark spends: this process's and
// that of the Postgres backends connected to the test database (read from
// /proc, so only when Postgres runs on this machine). On a shared machine
// the wall time of a drain follows the load of the minute; the CPU time
// per message much less, so it is the figure that compares two builds
// across runs. Backends are sampled every 50 ms: the CPU a backend spends
// between its last sample and its exit is missed.
type cpuMeter struct {
	conn  *sql.Conn
	self0 time.Duration

	mu    sync.Mutex
	first map[int]time.Duration // CPU of a backend seen at the start
	last  map[int]time.Duration // CPU of every backend at its last sample
	ok    bool                  // /proc shows the backends

	stopc, done chan struct{}
}

func startCPUMeter(b *testing.B, db *sql.DB) *cpuMeter {
	b.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	m := &cpuMeter{conn: conn, self0: selfCPU(), first: map[int]time.Duration{}, last: map[int]time.Duration{},
		stopc: make(chan struct{}), done: make(chan struct{})}
	m.sample(true)
	go func() {
		defer close(m.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.stopc:
				m.sample(false)
				return
			case <-tick.C:
				m.sample(false)
			}
		}
	}()
	return m
}

// sample reads the CPU time of every backend of the database but the
// meter's own.
func (m *cpuMeter) sample(start bool) {
	rows, err := m.conn.QueryContext(context.Background(),
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return
		}
		cpu, ok := procCPU(pid)
		if !ok {
			continue
		}
		m.mu.Lock()
		m.ok = true
		if _, seen := m.last[pid]; !seen && start {
			m.first[pid] = cpu
		}
		m.last[pid] = cpu
		m.mu.Unlock()
	}
}

// stop ends the sampling and returns the CPU time of the process and of
// the backends since the start; pgOK is false when /proc did not show the
// backends.
func (m *cpuMeter) stop() (self, pg time.Duration, pgOK bool) {
	close(m.stopc)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	for pid, cpu := range m.last {
		pg += cpu - m.first[pid]
	}
	return selfCPU() - m.self0, pg, m.ok
}

// report adds the CPU time per message to the benchmark's figures.
func (m *cpuMeter) report(b *testing.B, messages int) {
	self, pg, ok := m.stop()
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(messages) }
	b.ReportMetric(us(self), "go_cpu_us/msg")
	if ok {
		b.ReportMetric(us(pg), "pg_cpu_us/msg")
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU returns the user and system time of a process from
// /proc/<pid>/stat (in clock ticks of 10 ms).
func procCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, false
	}
	f := strings.Fields(s[i+2:]) // from field 3 (state) on
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}
