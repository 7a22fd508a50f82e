package postgres_test

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

// A database that stops answering mid-session (its host gone, the network
// cut: here every packet to and from its port dropped) fails the next
// statement in about postgres.DeadPeerTimeout, as an outage the callers'
// breakers see, instead of holding the caller until the kernel gives up
// (15 minutes and more without the dialer's keepalives and user timeout).
// The wait below is a failure's bound, not a measurement.
func TestStatementToADeadPeerFails(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("iptables"); err != nil {
		testenv.Unavailable(t, "iptables", err)
	}
	pg := testenv.PrivatePostgres(t)
	db, err := postgres.Open(context.Background(), postgres.Config{URL: pg.AdminURL()}, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`SELECT 1`); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(pg.Port)
	rules := [][]string{
		{"OUTPUT", "-o", "lo", "-p", "tcp", "--dport", port, "-j", "DROP"},
		{"INPUT", "-i", "lo", "-p", "tcp", "--sport", port, "-j", "DROP"},
	}
	for _, r := range rules {
		if out, err := exec.Command("iptables", append([]string{"-I"}, r...)...).CombinedOutput(); err != nil {
			testenv.Unavailable(t, "iptables (root, NET_ADMIN)", err)
			_ = out
		}
		t.Cleanup(func() { _ = exec.Command("iptables", append([]string{"-D"}, r...)...).Run() })
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := db.Exec(`SELECT 1`)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a statement through a dropped network succeeded")
		}
		t.Logf("failed after %s: %v", time.Since(start).Round(time.Second), err)
	case <-time.After(10 * postgres.DeadPeerTimeout):
		t.Fatalf("a statement to a dead peer still waits after %s", 10*postgres.DeadPeerTimeout)
	}
}
