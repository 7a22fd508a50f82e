package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchCompareGates runs scripts/bench-compare.sh on small files: a
// figure of the baseline missing from the run and a duplicate count above
// zero fail it; the same figures, or a subset with -allow-missing, pass.
func TestBenchCompareGates(t *testing.T) {
	t.Parallel()
	write := benchFiles(t)
	base := write("base.txt", "bench: e2e/ClassifierDrain: 500 classified_docs/s\n"+
		"bench: e2e/ClassifierDrain: 3.1 raw_writes_per_doc\n"+
		"bench: e2e/EndToEndLatency: 0 published_twice\n")
	same := write("same.txt", "noise\nbench: e2e/ClassifierDrain: 510 classified_docs/s (min 400, max 600, n=3)\n"+
		"bench: e2e/ClassifierDrain: 3.1 raw_writes_per_doc (min 3, max 3.2, n=3)\n"+
		"bench: e2e/EndToEndLatency: 0 published_twice (sum of n=3)\n")
	missing := write("missing.txt", "bench: e2e/ClassifierDrain: 510 classified_docs/s\n"+
		"bench: e2e/EndToEndLatency: 0 published_twice\n")
	twice := write("twice.txt", "bench: e2e/ClassifierDrain: 510 classified_docs/s\n"+
		"bench: e2e/ClassifierDrain: 3.1 raw_writes_per_doc\n"+
		"bench: e2e/EndToEndLatency: 2 published_twice (sum of n=3)\n")
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"same figures", []string{base, same}, 0},
		{"a figure missing", []string{base, missing}, 1},
		{"a subset with -allow-missing", []string{"-allow-missing", base, missing}, 0},
		{"published twice", []string{base, twice}, 1},
		{"published twice with -allow-missing", []string{"-allow-missing", base, twice}, 1},
	} {
		out, err := exec.Command("../scripts/bench-compare.sh", c.args...).CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.want {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.want, out)
		}
	}
}

// TestBenchCompareFlagsTailsAboveTheirFloor: a p99 many times the sum of
// its benchmark's floors is flagged with a FLOOR line; one within a few
// times is not, and neither changes the exit status.
func TestBenchCompareFlagsTailsAboveTheirFloor(t *testing.T) {
	t.Parallel()
	write := benchFiles(t)
	floors := "bench: publisher/PublishLag: 3.1 floor_pg_p99_ms (min 3, max 3.2, n=3)\n" +
		"bench: publisher/PublishLag: 1.9 floor_pg_commit_p99_ms (min 1, max 2, n=3)\n" +
		"bench: publisher/PublishLag: 3.2 floor_redis_p99_ms (min 3, max 4, n=3)\n"
	stalled := write("stalled.txt", "bench: publisher/PublishLag: 332.2 p99_ms (min 331, max 3899, n=3)\n"+floors)
	quick := write("quick.txt", "bench: publisher/PublishLag: 7.7 p99_ms (min 6, max 9, n=3)\n"+floors)
	for _, c := range []struct {
		name     string
		run      string
		flagged  bool
		floorArg []string
	}{
		{"a stalled tail", stalled, true, nil},
		{"a tail near its floors", quick, false, nil},
		{"a tail near its floors, a tighter -floor-x", quick, true, []string{"-floor-x", "0.5"}},
	} {
		args := append(append([]string{}, c.floorArg...), quick, c.run)
		out, err := exec.Command("../scripts/bench-compare.sh", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		if got := strings.Contains(string(out), "FLOOR: publisher/PublishLag p99_ms"); got != c.flagged {
			t.Errorf("%s: flagged %v, want %v\n%s", c.name, got, c.flagged, out)
		}
	}
}

// benchFiles returns a function that writes a file of a test's temporary
// directory and returns its path.
func benchFiles(t *testing.T) func(name, body string) string {
	dir := t.TempDir()
	return func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
