package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/esclient"
)

// ESNode is a private single-node Elasticsearch for one test: the same
// unpacked distribution scripts/services.sh installs, with a data directory,
// configuration and ports of its own, so the test may kill and restart it
// without touching the shared node other tests use.
type ESNode struct {
	// URL is the node's HTTP endpoint, e.g. http://127.0.0.1:41234.
	URL string
	// HTTPPort and TransportPort are the node's ports on 127.0.0.1.
	HTTPPort, TransportPort int

	t        testing.TB
	home     string // the distribution (read-only, shared)
	javaHome string
	heap     string
	javaOpts string
	dir      string // config/, data/, logs/, tmp/ of this node
	owner    serviceUser
	log      *logFile

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// ESOptions tune PrivateES.
type ESOptions struct {
	// Heap is the JVM heap (-Xms and -Xmx). Defaults to 256m.
	Heap string
	// StartTimeout bounds each start until the cluster is yellow.
	// Defaults to esStartTimeoutDefault (5 minutes).
	StartTimeout time.Duration
	// JavaOpts are added to ES_JAVA_OPTS after the heap. Defaults to
	// ESJavaOptsDefault; set to "-" for none.
	JavaOpts string
}

// ESJavaOptsDefault makes a test node start faster: the JIT stops at its
// first tier (start-up is mostly class loading and cold code, and a test
// node never runs long enough for the optimizing tier to pay off).
const ESJavaOptsDefault = "-XX:TieredStopAtLevel=1"

// esHome finds the unpacked Elasticsearch distribution: NC_ES_HOME, else the
// one scripts/services.sh installed for NC_ES_VERSION, else the newest it
// installed.
func esHome() (string, error) {
	if h := os.Getenv("NC_ES_HOME"); h != "" {
		return h, nil
	}
	base := filepath.Join(stateDir(), "elasticsearch")
	if v := os.Getenv("NC_ES_VERSION"); v != "" {
		h := filepath.Join(base, "elasticsearch-"+v)
		if _, err := os.Stat(filepath.Join(h, ".installed")); err == nil {
			return h, nil
		}
	}
	marker := newest(filepath.Join(base, "elasticsearch-8.*", ".installed"), filepath.Join(base, "elasticsearch-9.*", ".installed"))
	if marker == "" {
		return "", fmt.Errorf("no Elasticsearch installed under %s (run scripts/services.sh up, or set NC_ES_HOME)", base)
	}
	return filepath.Dir(marker), nil
}

// esJavaHome finds a JDK for Elasticsearch the way scripts/services.sh does.
func esJavaHome() (string, error) {
	if j := os.Getenv("NC_ES_JAVA_HOME"); j != "" {
		return j, nil
	}
	for _, pattern := range []string{"/usr/lib/jvm/java-17-openjdk-*", "/usr/lib/jvm/*-17-*"} {
		if j := newest(filepath.Join(pattern, "bin", "java")); j != "" {
			return filepath.Dir(filepath.Dir(j)), nil
		}
	}
	return "", fmt.Errorf("no JDK 17 under /usr/lib/jvm (set NC_ES_JAVA_HOME)")
}

// PrivateES starts a private Elasticsearch node and waits until it answers
// (cluster yellow). It is killed and its directory removed when the test
// ends. Where the distribution or a JDK is missing the test is skipped, or
// fails under CI=true.
func PrivateES(t testing.TB, opts ...ESOptions) *ESNode {
	t.Helper()
	var o ESOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Heap == "" {
		o.Heap = "256m"
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = esStartTimeoutDefault
	}
	switch o.JavaOpts {
	case "":
		o.JavaOpts = ESJavaOptsDefault
	case "-":
		o.JavaOpts = ""
	}
	home, err := esHome()
	if err != nil {
		Unavailable(t, "elasticsearch (private node)", err)
	}
	javaHome, err := esJavaHome()
	if err != nil {
		Unavailable(t, "elasticsearch (private node)", err)
	}
	owner := lookupServiceUser(t, "elasticsearch (private node)", "elasticsearch")
	dir := privateDir(t, "nc-private-es-", owner)
	for _, sub := range []string{"config", "data", "logs", "tmp"} {
		mkdirOwned(t, filepath.Join(dir, sub), 0o750, owner)
	}
	copyTree(t, filepath.Join(home, "config"), filepath.Join(dir, "config"), owner, "elasticsearch.yml")
	n := &ESNode{
		HTTPPort: FreePort(t), TransportPort: FreePort(t),
		t: t, home: home, javaHome: javaHome, heap: o.Heap, javaOpts: o.JavaOpts, dir: dir, owner: owner,
		log: &logFile{path: filepath.Join(dir, "node.out")},
	}
	n.URL = "http://127.0.0.1:" + strconv.Itoa(n.HTTPPort)
	yml := fmt.Sprintf(`# written by testenv.PrivateES
cluster.name: nc-private-%d
node.name: private-1
discovery.type: single-node
network.host: 127.0.0.1
http.port: %d
transport.port: %d
path.data: %s
path.logs: %s
xpack.security.enabled: false
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
`, n.HTTPPort, n.HTTPPort, n.TransportPort, filepath.Join(dir, "data"), filepath.Join(dir, "logs"))
	writeOwned(t, filepath.Join(dir, "config", "elasticsearch.yml"), []byte(yml), 0o640, owner)
	writeOwned(t, n.log.path, nil, 0o644, owner)

	t.Cleanup(func() {
		if n.Running() {
			n.signal(syscall.SIGKILL)
			n.wait(30 * time.Second)
		}
	})
	if err := n.start(o.StartTimeout); err != nil {
		t.Fatalf("private elasticsearch: %v\n%s", err, n.LogTail(40))
	}
	return n
}

// Client returns a client for the node. It does not retry or wait: a test
// that killed the node gets errors from it, as a service would.
func (n *ESNode) Client() *esclient.Client {
	n.t.Helper()
	c, err := esclient.NewLazy(esclient.Config{URL: n.URL})
	if err != nil {
		n.t.Fatalf("private elasticsearch client: %v", err)
	}
	return c
}

// Running reports whether the node's process is alive.
func (n *ESNode) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the node (its launcher and server JVMs: the whole
// process group) and waits until it is gone.
func (n *ESNode) Kill() {
	n.t.Helper()
	n.log.note("SIGKILL at %s", time.Now().UTC().Format(time.RFC3339Nano))
	n.signal(syscall.SIGKILL)
	if !n.wait(30 * time.Second) {
		n.t.Fatalf("private elasticsearch did not die within 30s of SIGKILL")
	}
}

// Stop asks the node to shut down (SIGTERM) and waits for it, killing it
// after 60s.
func (n *ESNode) Stop() {
	n.t.Helper()
	n.log.note("SIGTERM at %s", time.Now().UTC().Format(time.RFC3339Nano))
	n.signal(syscall.SIGTERM)
	if !n.wait(60 * time.Second) {
		n.Kill()
	}
}

// Start starts the node again on the same ports and data, and waits until
// it answers. It fails the test if the node does not come up within
// esStartTimeoutDefault.
func (n *ESNode) Start() {
	n.t.Helper()
	if err := n.TryStart(); err != nil {
		n.t.Fatalf("restart private elasticsearch: %v\n%s", err, n.LogTail(40))
	}
}

// TryStart is Start for a goroutine other than the test's: it returns the
// error instead of failing the test.
func (n *ESNode) TryStart() error { return n.start(esStartTimeoutDefault) }

// esStartTimeoutDefault bounds a node's start until it answers: a JVM that
// starts in 20 s on a quiet machine took over two minutes on a busy one,
// and the wait ends as soon as the node is up.
const esStartTimeoutDefault = 5 * time.Minute

// LogTail returns the last lines of the node's console output.
func (n *ESNode) LogTail(lines int) string { return n.log.Tail(lines) }

func (n *ESNode) start(timeout time.Duration) error {
	if n.Running() {
		return fmt.Errorf("already running")
	}
	out, err := n.log.open()
	if err != nil {
		return err
	}
	n.log.note("start at %s (heap %s, http %d, transport %d)", time.Now().UTC().Format(time.RFC3339Nano), n.heap, n.HTTPPort, n.TransportPort)
	cmd := exec.Command(filepath.Join(n.home, "bin", "elasticsearch"), "-p", filepath.Join(n.dir, "es.pid"))
	cmd.Dir = n.home
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + n.dir,
		"ES_PATH_CONF=" + filepath.Join(n.dir, "config"),
		"ES_JAVA_HOME=" + n.javaHome,
		"ES_TMPDIR=" + filepath.Join(n.dir, "tmp"),
		"ES_JAVA_OPTS=" + strings.TrimSpace("-Xms"+n.heap+" -Xmx"+n.heap+" "+n.javaOpts),
	}
	// A process group of its own: Kill reaches the launcher and the server
	// JVM it forks, and a signal to the test's group does not reach them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: n.owner.cred}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(done)
	}()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()

	deadline := time.Now().Add(timeout)
	for {
		if n.ready() {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("the node exited while starting (see %s)", n.log.path)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %s", timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (n *ESNode) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.URL+"/_cluster/health?wait_for_status=yellow&timeout=2s", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

func (n *ESNode) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	// The group first (launcher and server), then the leader in case the
	// group is already gone.
	_ = syscall.Kill(-n.cmd.Process.Pid, sig)
	_ = n.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL {
		// The server JVM may have left the group; its pid file names it.
		if b, err := os.ReadFile(filepath.Join(n.dir, "es.pid")); err == nil {
			if pid, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && pid > 1 {
				_ = syscall.Kill(pid, sig)
			}
		}
	}
}

func (n *ESNode) wait(timeout time.Duration) bool {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
	case <-time.After(timeout):
		return false
	}
	// The launcher is gone; give the server JVM (same group) a moment too,
	// so the port and the data directory lock are free for a restart.
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(n.dir, "es.pid")); err == nil {
			if pid, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && pid > 1 && syscall.Kill(pid, 0) == nil && isES(pid) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
		}
		return true
	}
	return false
}

// isES reports whether pid is still an Elasticsearch JVM (not a recycled pid).
func isES(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte("org.elasticsearch"))
}
