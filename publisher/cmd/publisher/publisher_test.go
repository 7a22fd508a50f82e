package main_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outboxtest"
)

// buildBinary compiles the publisher into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "publisher")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type proc struct {
	cmd  *exec.Cmd
	logs *bytes.Buffer
	addr string
}

func startBinary(t *testing.T, bin string, env ...string) *proc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "PUBLISHER_HTTP_ADDR="+addr, "LOG_LEVEL=debug")
	cmd.Env = append(cmd.Env, env...)
	p := &proc{cmd: cmd, logs: &bytes.Buffer{}, addr: addr}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("publisher logs:\n%s", p.logs.String())
		}
	})
	outboxtest.WaitFor(t, time.Minute, "publisher /health", func() bool {
		resp, err := http.Get("http://" + addr + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// A publisher killed with SIGKILL in the middle of a batch leaves its rows
// publishing; the next publisher rescues them after the stale age and
// publishes every row. Only rows of the killed batch may arrive twice.
// Redis is paused for writes while the first process claims, so the kill
// lands while its batch is in flight, every time.
func TestSIGKILLMidBatchRowsAreRescued(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	db, dsn := outboxtest.Database(t)
	rs := outboxtest.StartRedis(t)
	admin := rs.Client()
	sub := outboxtest.Subscribe(t, rs.Client())
	ctx := context.Background()
	const n = 1500
	outboxtest.Insert(t, db, outboxtest.Rows("kill", n))
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "120000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(ctx, "CLIENT", "UNPAUSE") })
	env := []string{"PUBLISHER_DATABASE_URL=" + dsn, "REDIS_URL=" + rs.URL(), "PUBLISHER_OUTBOX_BATCH_SIZE=500",
		"PUBLISHER_OUTBOX_PUBLISH_TIMEOUT=1s", "PUBLISHER_OUTBOX_STALE_AFTER=2s", "PUBLISHER_OUTBOX_POLL_INTERVAL=200ms"}
	first := startBinary(t, bin, env...)
	outboxtest.WaitFor(t, time.Minute, "a batch in flight", func() bool { return outboxtest.Counts(t, db)["publishing"] == 500 })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	inFlight := map[string]bool{}
	rows, err := db.Query(`SELECT content_id FROM classified_outbox WHERE status = 'publishing'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		inFlight[id] = true
	}
	rows.Close()
	if len(inFlight) != 500 {
		t.Fatalf("%d rows publishing after the kill, want the batch of 500", len(inFlight))
	}
	if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}

	second := startBinary(t, bin, env...)
	outboxtest.WaitFor(t, 2*time.Minute, "every row published and received", func() bool {
		ids, _ := sub.Distinct()
		return ids == n && outboxtest.Counts(t, db)["published"] == n
	})
	for id, c := range sub.Counts() {
		if c > 1 && !inFlight[id] {
			t.Errorf("%s received %d times but was not in the killed batch", id, c)
		}
	}
	metrics := get(t, "http://"+second.addr+"/metrics")
	for _, want := range []string{"publisher_outbox_rescued_total 500", `classifier_outbox_published_total{channel="articles:news"} `,
		"classifier_outbox_publish_lag_seconds_bucket", `classifier_outbox_backlog{status="pending"} 0`, "publisher_redis_breaker_state 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// SIGTERM: graceful stop, exit 0.
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Errorf("publisher exit after SIGTERM: %v", err)
	}
}

// A configuration error names the offending new variables and exits 2.
func TestBadConfigurationExits2(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "PUBLISHER_DATABASE_URL=postgres://x@127.0.0.1:1/x", "JWT_SECRET="+strings.Repeat("s", 32),
		"PUBLISHER_OUTBOX_RETENTION=forever", "PUBLISHER_STREAM_MIRROR=maybe", "PUBLISHER_OUTBOX_STALE_AFTER=1s")
	out, err := cmd.CombinedOutput()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\n%s", err, out)
	}
	for _, v := range []string{"PUBLISHER_OUTBOX_RETENTION", "PUBLISHER_STREAM_MIRROR", "PUBLISHER_OUTBOX_STALE_AFTER"} {
		if !bytes.Contains(out, []byte(v)) {
			t.Errorf("error does not name %s:\n%s", v, out)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

var _ = fmt.Sprint
var _ = testenv.InCI
