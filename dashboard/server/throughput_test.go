package server_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	server "github.com/north-cloud/dashboard-server"
	"github.com/north-cloud/infrastructure/testenv"
)

// TestThroughputAcrossRestarts: the Overview's per-source throughput (the
// server's own queries, over its 1h range) is within a tenth of the true
// rate, 100 documents a minute, for a source that keeps classifying
// through a classifier restart: one that keeps the series' labels (a
// counter reset), one that comes back as another instance (a new series),
// in the minutes right after the restart and later; and a source that
// began 10 minutes ago is counted whole, with what its first scrape held. Prometheus's own rule test tool
// evaluates the queries over series written out sample by sample (one a
// scrape, 15 s).
func TestThroughputAcrossRestarts(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Unavailable(t, "promtool (apt-get install prometheus)", err)
	}
	// 25 documents a scrape is 100 a minute. Down from 60m to 61m.
	const (
		upTo60m   = "0+25x240"
		down      = " stale stale stale stale"
		from61m   = " 25+25x300"
		notYet61m = "_x244"
	)
	series := map[string]string{
		`classifier_documents_processed_total{source="steady",instance="c:1"}`:            "0+25x560",
		`classifier_documents_processed_total{source="restart",instance="c:1"}`:           upTo60m + down + from61m,
		`classifier_documents_processed_total{source="moved",instance="c:1"}`:             upTo60m + down,
		`classifier_documents_processed_total{source="moved",instance="c:2"}`:             notYet61m + from61m,
		`classifier_documents_processed_total{source="young",instance="c:1"}`:             "_x320 1000+25x40",
		`classifier_publications_total{source="restart",decision="first",instance="c:1"}`: upTo60m + down + from61m,
	}
	var b strings.Builder
	b.WriteString("rule_files: [rules.yml]\nevaluation_interval: 15s\ntests:\n  - interval: 15s\n    input_series:\n")
	for s, v := range series {
		fmt.Fprintf(&b, "      - series: '%s'\n        values: '%s'\n", s, v)
	}
	b.WriteString("    promql_expr_test:\n")
	// within is 1 for each source whose throughput is within a tenth of lo..hi per minute.
	within := func(q string, lo, hi float64) string {
		return fmt.Sprintf("((%s) >= bool %g) * ((%s) <= bool %g)", q, lo*0.9, q, hi*1.1)
	}
	classified, published := server.ThroughputQuery(true, "1h", ""), server.ThroughputQuery(false, "1h", "")
	for _, at := range []int{62, 63, 65, 70, 90, 119} {
		// The hour before at holds 59 minutes of classifying (the restart's
		// minute lost) or 60: 98.3 to 100 a minute.
		fmt.Fprintf(&b, "      - expr: %q\n        eval_time: %dm\n        exp_samples:\n", within(classified, 98.3, 100), at)
		for _, s := range []string{"steady", "restart", "moved"} {
			fmt.Fprintf(&b, "          - labels: '{source=%q}'\n            value: 1\n", s)
		}
		if at >= 80 {
			// Not 100 a minute: checked on its own below.
			fmt.Fprintf(&b, "          - labels: '{source=%q}'\n            value: 0\n", "young")
		}
		fmt.Fprintf(&b, "      - expr: %q\n        eval_time: %dm\n        exp_samples:\n          - labels: '{source=\"restart\"}'\n            value: 1\n",
			within(published, 98.3, 100), at)
	}
	// The young source at 90m: 2,000 documents in the hour, 1,000 of them
	// already counted at its first scrape (increase() alone would miss them).
	fmt.Fprintf(&b, "      - expr: %q\n        eval_time: 90m\n        exp_samples:\n          - labels: '{source=\"young\"}'\n            value: 1\n",
		within(server.ThroughputQuery(true, "1h", "young"), 2000.0/60, 2000.0/60))
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "rules.yml"), []byte("groups: []\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "throughput_test.yml"), []byte(b.String()), 0o600))
	cmd := exec.Command(bin, "test", "rules", "throughput_test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool: %v\n%s\n--- the test it ran:\n%s", err, out, b.String())
	}
}
