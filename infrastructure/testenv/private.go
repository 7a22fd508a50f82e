package testenv

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// This file holds what the private dependencies (PrivateES, PrivatePostgres,
// PrivateRedis) share: a directory a service user may write, free ports,
// running a daemon as that user in a process group of its own, and a log
// the test can quote.
//
// A test that kills, stops or reconfigures a dependency must use a private
// one: the instances of scripts/services.sh serve every other test running
// at the same time.
//
// Where the installs are found (each variable overrides the search):
// NC_STATE_DIR (scripts/services.sh's state dir, default
// /var/lib/north-cloud), NC_ES_HOME or NC_ES_VERSION (the unpacked
// Elasticsearch under $NC_STATE_DIR/elasticsearch), NC_ES_JAVA_HOME (a JDK
// 17 under /usr/lib/jvm) and NC_PG_BIN (the newest
// /usr/lib/postgresql/*/bin). As root the daemons run as the elasticsearch
// and postgres system users that `scripts/services.sh up` ensures.

// stateDir is where scripts/services.sh keeps its installs (NC_STATE_DIR).
func stateDir() string {
	if d := os.Getenv("NC_STATE_DIR"); d != "" {
		return d
	}
	return "/var/lib/north-cloud"
}

// FreePort returns a loopback TCP port nobody listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serviceUser is the system user a private daemon runs as. As root it is
// the named user (Elasticsearch and PostgreSQL refuse to run as root); as
// anybody else it is the current user, who is not root and so acceptable.
type serviceUser struct {
	name     string
	uid, gid int
	// cred is nil when the daemon runs as the current user.
	cred *syscall.Credential
}

func lookupServiceUser(t testing.TB, service, name string) serviceUser {
	t.Helper()
	if os.Geteuid() != 0 {
		return serviceUser{name: "(current user)", uid: os.Getuid(), gid: os.Getgid()}
	}
	u, err := user.Lookup(name)
	if err != nil {
		Unavailable(t, service, fmt.Errorf("system user %q: %w (scripts/services.sh up creates it)", name, err))
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return serviceUser{name: name, uid: uid, gid: gid,
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
}

// privateDir makes a fresh directory under the system temp dir, traversable
// by everyone and owned by owner, removed when the test ends (after the
// daemon's own cleanup, which is registered later and so runs first).
func privateDir(t testing.TB, prefix string, owner serviceUser) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("private dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("private dir: %v", err)
	}
	chown(t, dir, owner)
	return dir
}

// mkdirOwned creates dir (mode perm) owned by owner.
func mkdirOwned(t testing.TB, dir string, perm os.FileMode, owner serviceUser) {
	t.Helper()
	if err := os.MkdirAll(dir, perm); err != nil {
		t.Fatalf("mkdir %s: %v", dir, err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatalf("chmod %s: %v", dir, err)
	}
	chown(t, dir, owner)
}

func chown(t testing.TB, path string, owner serviceUser) {
	t.Helper()
	if owner.cred == nil {
		return
	}
	if err := os.Lchown(path, owner.uid, owner.gid); err != nil {
		t.Fatalf("chown %s: %v", path, err)
	}
}

// writeOwned writes a file owned by owner.
func writeOwned(t testing.TB, path string, data []byte, perm os.FileMode, owner serviceUser) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	chown(t, path, owner)
}

// copyTree copies the regular files and directories of src into dst, owned
// by owner, skipping the names in skip.
func copyTree(t testing.TB, src, dst string, owner serviceUser, skip ...string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		for _, s := range skip {
			if rel == s {
				return nil
			}
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o750); err != nil {
				return err
			}
			chown(t, target, owner)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		writeOwned(t, target, data, 0o640, owner)
		return nil
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

// logFile is a daemon's output: kept in a file so that it survives
// restarts, and quoted in failure messages.
type logFile struct {
	mu   sync.Mutex
	path string
}

func (l *logFile) open() (*os.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// Tail returns the last n lines of the log.
func (l *logFile) Tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	data, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Sprintf("(no log at %s: %v)", l.path, err)
	}
	return lastLines(string(data), n)
}

// note appends a line of the harness's own to the log.
func (l *logFile) note(format string, args ...any) {
	f, err := l.open()
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "=== testenv: "+format+"\n", args...)
}

// run runs a short command as owner and returns its combined output.
func run(owner serviceUser, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = "/"
	cmd.Env = env
	if owner.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: owner.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// newest returns the lexically newest existing match of the glob patterns,
// version-sorted by path length first so that 8.19.21 beats 8.9.1.
func newest(patterns ...string) string {
	var all []string
	for _, p := range patterns {
		m, _ := filepath.Glob(p)
		all = append(all, m...)
	}
	if len(all) == 0 {
		return ""
	}
	sort.Slice(all, func(i, j int) bool {
		if len(all[i]) != len(all[j]) {
			return len(all[i]) < len(all[j])
		}
		return all[i] < all[j]
	})
	return all[len(all)-1]
}
