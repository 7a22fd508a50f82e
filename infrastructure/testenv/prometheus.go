package testenv

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// prometheusReadyTimeout bounds the wait for /-/ready; the wait ends as soon
// as Prometheus answers, so a generous bound costs a quiet machine nothing.
const prometheusReadyTimeout = 2 * time.Minute

// Prometheus runs the prometheus binary bin with config (a prometheus.yml
// body) on a free loopback port, with its data in the test's temporary
// directory, until the test ends (SIGTERM, then SIGKILL after 30 s, which
// fails the test). It returns the address once /-/ready answers, and fails
// the test when the process exits first or never becomes ready.
func Prometheus(t testing.TB, bin, config string) string {
	t.Helper()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o644); err != nil {
		t.Fatalf("prometheus config: %v", err)
	}
	log := &logFile{path: filepath.Join(dir, "prometheus.log")}
	out, err := log.open()
	if err != nil {
		t.Fatalf("prometheus log: %v", err)
	}
	defer out.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("prometheus did not stop within 30s of SIGTERM\n%s", log.Tail(20))
		}
	})
	deadline := time.After(prometheusReadyTimeout)
	for {
		if res, err := http.Get("http://" + addr + "/-/ready"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return addr
			}
		}
		select {
		case err := <-done:
			t.Fatalf("prometheus exited: %v\n%s", err, log.Tail(40))
		case <-deadline:
			t.Fatalf("prometheus /-/ready did not answer within %s\n%s", prometheusReadyTimeout, log.Tail(40))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
