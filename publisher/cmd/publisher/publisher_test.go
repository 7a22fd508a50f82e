package main_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/worker"
)

// buildBinary compiles the publisher into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "publisher")
	if err := testenv.GoBuild(".", bin, "."); err != nil {
		t.Fatal(err)
	}
	return bin
}

// setup builds the binary and gives the test a migrated database and a
// Redis server of its own, and the environment that points the binary at
// them, polling every 200ms, with env added.
func setup(t *testing.T, env ...string) (bin string, db *sql.DB, rs *outboxtest.RedisServer, fullEnv []string) {
	t.Helper()
	bin = buildBinary(t)
	db, dsn := outboxtest.Database(t)
	rs = outboxtest.StartRedis(t)
	return bin, db, rs, append([]string{"PUBLISHER_DATABASE_URL=" + dsn, "REDIS_URL=" + rs.URL(), "PUBLISHER_OUTBOX_POLL_INTERVAL=200ms"}, env...)
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
// publishes every row. Only rows of the killed batches may arrive twice.
// Redis is paused for writes while the first process claims, so the kill
// lands while a batch of each claim loop is in flight, every time.
func TestSIGKILLMidBatchRowsAreRescued(t *testing.T) {
	t.Parallel()
	bin, db, rs, env := setup(t, "PUBLISHER_OUTBOX_BATCH_SIZE=500", "PUBLISHER_OUTBOX_PUBLISH_TIMEOUT=1s", "PUBLISHER_OUTBOX_STALE_AFTER=2s")
	admin := rs.Client()
	sub := outboxtest.Subscribe(t, rs.Client())
	ctx := context.Background()
	const n = 1500
	killed := 500 * worker.ClaimLoopsDefault // a batch of 500 in each claim loop
	outboxtest.Insert(t, db, outboxtest.Rows("kill", n))
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "120000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(ctx, "CLIENT", "UNPAUSE") })
	first := startBinary(t, bin, env...)
	outboxtest.WaitFor(t, time.Minute, "a batch in flight in each claim loop", func() bool { return outboxtest.Counts(t, db)["publishing"] == killed })
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
	if len(inFlight) != killed {
		t.Fatalf("%d rows publishing after the kill, want the %d of the batches in flight", len(inFlight), killed)
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
	for _, want := range []string{fmt.Sprintf("publisher_outbox_rescued_total %d", killed), `classifier_outbox_published_total{channel="articles:news"} `,
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

// Redis starts refusing the publisher's connection (a password is set and
// its connections are dropped: NOAUTH): the Redis breaker opens, /ready
// answers 503 naming it, the gauge reports it, and the rows wait pending with
// no retry spent. When Redis accepts the connection again, /ready recovers
// and every row is published.
func TestReadyNamesOpenBreaker(t *testing.T) {
	t.Parallel()
	bin, db, rs, env := setup(t, "PUBLISHER_OUTBOX_BATCH_SIZE=5", "PUBLISHER_REDIS_BREAKER_COOLDOWN=100ms")
	ctx := context.Background()
	p := startBinary(t, bin, env...)
	outboxtest.Insert(t, db, outboxtest.Rows("ready-before", 5))
	outboxtest.WaitFor(t, time.Minute, "first rows published", func() bool { return outboxtest.Counts(t, db)["published"] == 5 })
	if code, body := getStatus(t, "http://"+p.addr+"/ready"); code != http.StatusOK {
		t.Fatalf("/ready %d %s", code, body)
	}

	admin := rs.Client()
	if err := admin.ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	outboxtest.Insert(t, db, outboxtest.Rows("ready-during", 20))
	var ready struct {
		Failing []string          `json:"failing"`
		Checks  map[string]string `json:"checks"`
	}
	outboxtest.WaitFor(t, time.Minute, "/ready naming the open breaker", func() bool {
		code, body := getStatus(t, "http://"+p.addr+"/ready")
		ready.Failing = nil
		if err := json.Unmarshal([]byte(body), &ready); err != nil {
			t.Fatalf("/ready body %s: %v", body, err)
		}
		return code == http.StatusServiceUnavailable && slices.Contains(ready.Failing, "redis_breaker")
	})
	// Anonymous callers see that the breaker fails, not why; an operator
	// with a token reads the reason.
	if c := ready.Checks["redis_breaker"]; c != "failing" || ready.Checks["postgres_breaker"] != "ok" {
		t.Errorf("anonymous /ready checks %v, want redis_breaker failing without its error text", ready.Checks)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/ready", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ready.Checks = nil
	if err := json.Unmarshal(body, &ready); err != nil {
		t.Fatalf("/ready body %s: %v", body, err)
	}
	if c := ready.Checks["redis_breaker"]; !strings.HasPrefix(c, "redis circuit breaker ") {
		t.Errorf("/ready checks with a token %v, want the breaker's reason", ready.Checks)
	}
	metrics := get(t, "http://"+p.addr+"/metrics")
	if !strings.Contains(metrics, `publisher_breaker_state{dependency="redis"} 2`) && !strings.Contains(metrics, `publisher_breaker_state{dependency="redis"} 1`) {
		t.Errorf("/metrics breaker state:\n%s", metrics)
	}
	outboxtest.WaitFor(t, time.Minute, "claimed rows released", func() bool { return outboxtest.Counts(t, db)["publishing"] == 0 })
	var spent int
	if err := db.QueryRow(`SELECT COUNT(*) FROM classified_outbox WHERE retry_count > 0 OR status = 'failed'`).Scan(&spent); err != nil || spent != 0 {
		t.Fatalf("%d rows spent a retry (%v)", spent, err)
	}

	if err := admin.ConfigSet(ctx, "requirepass", "").Err(); err != nil { // admin's connection is authenticated
		t.Fatal(err)
	}
	outboxtest.WaitFor(t, time.Minute, "every row published", func() bool { return outboxtest.Counts(t, db)["published"] == 25 })
	outboxtest.WaitFor(t, time.Minute, "/ready again", func() bool {
		code, _ := getStatus(t, "http://"+p.addr+"/ready")
		return code == http.StatusOK
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait() // the log buffer is read only once the process is gone
	if !strings.Contains(p.logs.String(), "redis unusable: circuit breaker open") || !strings.Contains(p.logs.String(), "redis usable again") {
		t.Errorf("breaker state changes not logged:\n%s", p.logs.String())
	}
}

// operatorToken is a token signed with the JWT_SECRET the binaries get from
// the environment (scripts/services.sh env).
func operatorToken(t *testing.T) string {
	t.Helper()
	return authtest.EnvToken(t, "publisher-test", auth.RoleOperator)
}

func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	status, body, err := testenv.HTTPGet(url, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return status, body
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
	_, body := getStatus(t, url)
	return body
}

var _ = fmt.Sprint
var _ = testenv.InCI

// The JWT secret of .env.example is public: a publisher given it refuses
// to start (exit 2, naming JWT_SECRET), as every service does.
func TestRefusesExamplePlaceholderSecret(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile("../../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	var secret string
	for line := range strings.Lines(string(example)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "JWT_SECRET="); ok {
			secret = v
		}
	}
	if len(secret) < 32 {
		t.Fatalf(".env.example has no usable-looking JWT_SECRET (%q)", secret)
	}
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "PUBLISHER_DATABASE_URL=postgres://x@127.0.0.1:1/x", "JWT_SECRET="+secret)
	out, err := cmd.CombinedOutput()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 2 || !bytes.Contains(out, []byte("JWT_SECRET: is the example placeholder")) {
		t.Fatalf("exit %v, want 2 naming the placeholder JWT_SECRET\n%s", err, out)
	}
}

// The Redis password never reaches the log: the start-up line names the
// server with the password masked.
func TestRedisPasswordNotLogged(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "PUBLISHER_DATABASE_URL=postgres://x@127.0.0.1:1/x", "CONNECT_TIMEOUT=1s",
		"REDIS_URL=redis://:s3cr3t-redis-pw@127.0.0.1:1/0", "PUBLISHER_HTTP_ADDR=127.0.0.1:0")
	out, _ := cmd.CombinedOutput()
	if !bytes.Contains(out, []byte("starting publisher")) || !bytes.Contains(out, []byte("127.0.0.1:1/0")) {
		t.Fatalf("no start-up line naming redis:\n%s", out)
	}
	if bytes.Contains(out, []byte("s3cr3t-redis-pw")) {
		t.Fatalf("the Redis password is in the log:\n%s", out)
	}
}

// PUBLISHER_OUTBOX_ENABLED=false switches the outbox worker off (the spec's
// rollback switch): the publisher serves, says so on /ready (degraded, not
// unready) and /metrics, and publishes nothing; rows wait pending and a
// publisher with the worker on publishes every one of them.
func TestOutboxWorkerOffSwitch(t *testing.T) {
	t.Parallel()
	bin, db, _, env := setup(t)
	off := startBinary(t, bin, append(env, "PUBLISHER_OUTBOX_ENABLED=false")...)
	outboxtest.Insert(t, db, outboxtest.Rows("switched-off", 5))

	code, body := getStatus(t, "http://"+off.addr+"/ready")
	var ready struct {
		Status   string            `json:"status"`
		Degraded []string          `json:"degraded"`
		Checks   map[string]string `json:"checks"`
	}
	if err := json.Unmarshal([]byte(body), &ready); err != nil {
		t.Fatalf("/ready body %s: %v", body, err)
	}
	if code != http.StatusOK || !slices.Contains(ready.Degraded, "outbox_worker") {
		t.Errorf("/ready with the worker off: %d %s, want 200 naming outbox_worker degraded", code, body)
	}
	if _, m := getStatus(t, "http://"+off.addr+"/metrics"); !strings.Contains(m, "publisher_outbox_worker_enabled 0") {
		t.Errorf("/metrics lacks publisher_outbox_worker_enabled 0")
	}

	on := startBinary(t, bin, env...)
	outboxtest.WaitFor(t, time.Minute, "rows published by the publisher with the worker on", func() bool {
		return outboxtest.Counts(t, db)["published"] == 5
	})
	if _, m := getStatus(t, "http://"+on.addr+"/metrics"); !strings.Contains(m, "publisher_outbox_worker_enabled 1") {
		t.Errorf("/metrics of the running worker lacks publisher_outbox_worker_enabled 1")
	}
	// Stopped first: Wait ends the copying of its output, so the logs are
	// read after the last write.
	if err := off.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := off.cmd.Wait(); err != nil {
		t.Errorf("switched-off publisher exited with %v", err)
	}
	logs := off.logs.String()
	if strings.Contains(logs, "outbox worker started") || !strings.Contains(logs, "outbox worker disabled") {
		t.Errorf("the switched-off publisher's logs should say the worker is disabled and never started it:\n%s", logs)
	}
}
