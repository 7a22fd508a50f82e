package e2e

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// binaries builds the service binaries once per test binary run.
var binaries = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "north-cloud-e2e-bin-")
	if err != nil {
		return "", err
	}
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	for _, module := range []string{"classifier", "publisher", "index-manager"} {
		if err := testenv.GoBuild(filepath.Join(root, module), dir+"/", "./cmd/..."); err != nil {
			return "", err
		}
	}
	return dir, nil
})

func binary(t *testing.T, name string) string { return binaryB(t, name) }

// binaryB returns the path of a built service binary.
func binaryB(t testing.TB, name string) string {
	t.Helper()
	dir, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// runBinary runs a binary to completion with extra environment and returns
// its output, failing the test on error.
func runBinary(t testing.TB, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	return string(out)
}

// migrateOutbox creates the outbox in the database at publisherDB with the
// publisher's own migrations (publisher migrate up).
func migrateOutbox(t testing.TB, publisherDB string) {
	t.Helper()
	runBinary(t, binaryB(t, "publisher"), []string{"PUBLISHER_DATABASE_URL=" + publisherDB}, "migrate", "up")
}

// runLoader runs cmd/loader (raw documents into Elasticsearch) with args
// and extra environment, and returns its output.
func runLoader(t testing.TB, env []string, args ...string) string {
	t.Helper()
	return runBinary(t, binaryB(t, "loader"), env, args...)
}

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string { return freeAddrB(t) }

func freeAddrB(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process is a service binary running for one test.
type process struct {
	name string
	cmd  *exec.Cmd
	addr string
	log  *testenv.SyncBuffer
	done chan error
}

// startService runs a service binary with the given environment on top of
// the test's own, waits until /ready answers 200, and stops it (SIGTERM) at
// cleanup, failing the test if it does not exit cleanly.
func startService(t *testing.T, name string, env map[string]string) *process {
	t.Helper()
	p := &process{name: name, addr: freeAddr(t), log: &testenv.SyncBuffer{}, done: make(chan error, 1)}
	addrVar := strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_HTTP_ADDR"
	p.cmd = exec.Command(binary(t, name))
	p.cmd.Env = append(os.Environ(), addrVar+"="+p.addr, "LOG_FORMAT=text", "LOG_LEVEL=info")
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("%s did not exit cleanly on SIGTERM: %v\n%s", name, err, p.log.Tail(40))
			}
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			t.Errorf("%s did not stop within 30s of SIGTERM\n%s", name, p.log.Tail(40))
		}
	})
	start := time.Now()
	deadline := testenv.GiveUpAt(t, 60*time.Second)
	for {
		status, body := p.get(t, "/ready")
		if status == http.StatusOK {
			return p
		}
		select {
		case err := <-p.done:
			t.Fatalf("%s exited before ready: %v\n%s", name, err, p.log.Tail(40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s (last: %d %s)\n%s", name, time.Since(start).Round(time.Second), status, body, p.log.Tail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pipeline is the three services of one test, each on a database of its
// own, with the shared Elasticsearch and Redis.
type pipeline struct {
	classifierDB, publisherDB           string
	classifier, publisher, indexManager *process
}

// startPipeline starts the publisher first (its migrations create the
// outbox and grant the harness's INSERT-only role), then the classifier on
// the raw indices under prefix as replica id, writing the outbox with that
// role as in production, then the index-manager; the publisher and the
// classifier poll every 200ms. extra adds to a service's environment (or
// replaces a variable of it), by binary name.
func startPipeline(t *testing.T, prefix, id string, extra map[string]map[string]string) pipeline {
	t.Helper()
	p := pipeline{classifierDB: testenv.Postgres(t), publisherDB: testenv.Postgres(t)}
	env := func(service string, base map[string]string) map[string]string {
		maps.Copy(base, extra[service])
		return base
	}
	p.publisher = startService(t, "publisher", env("publisher", map[string]string{
		"PUBLISHER_DATABASE_URL":         p.publisherDB,
		"PUBLISHER_OUTBOX_POLL_INTERVAL": "200ms",
	}))
	p.classifier = startService(t, "classifier", env("classifier", map[string]string{
		"CLASSIFIER_DATABASE_URL":        p.classifierDB,
		"CLASSIFIER_OUTBOX_DATABASE_URL": testenv.WithUser(t, p.publisherDB, "classifier", "classifier"),
		"CLASSIFIER_INDEX_PATTERN":       prefix + "*" + contentindex.RawSuffix,
		"CLASSIFIER_POLL_INTERVAL":       "200ms",
		"CLASSIFIER_ID":                  id,
	}))
	p.indexManager = startService(t, "index-manager", env("index-manager", map[string]string{
		"INDEX_MANAGER_DATABASE_URL": testenv.Postgres(t),
	}))
	return p
}

// get returns the status and body of GET path, or 0 when nothing answers.
func (p *process) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return httpGet(p.addr, path)
}

// httpGet returns the status and body of GET http://addr/path, or 0 and the
// error when nothing answers within 5s.
func httpGet(addr, path string) (int, string) {
	status, body, err := testenv.HTTPGet("http://"+addr+path, 5*time.Second)
	if err != nil {
		return 0, err.Error()
	}
	return status, body
}

// relay forwards TCP connections to a target so a test can cut a service
// off from a real dependency (and restore it) without stopping the
// dependency for everyone else.
type relay struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newRelay(t *testing.T, target string) *relay {
	t.Helper()
	r := &relay{target: target, addr: freeAddr(t), conns: map[net.Conn]struct{}{}}
	if err := r.open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cut)
	return r
}

// open starts accepting on the relay's address.
func (r *relay) open() error {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		return fmt.Errorf("relay listen %s: %w", r.addr, err)
	}
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", r.target)
			if err != nil {
				in.Close()
				continue
			}
			r.track(in, out)
			r.wg.Add(2)
			go r.pipe(in, out)
			go r.pipe(out, in)
		}
	}()
	return nil
}

func (r *relay) track(conns ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range conns {
		r.conns[c] = struct{}{}
	}
}

func (r *relay) pipe(dst, src net.Conn) {
	defer r.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// cut stops accepting and closes every open connection.
func (r *relay) cut() {
	r.mu.Lock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for c := range r.conns {
		c.Close()
	}
	r.conns = map[net.Conn]struct{}{}
	r.mu.Unlock()
	r.wg.Wait()
}
