package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/testenv"
)

// TestPrometheusScrapesThePipeline runs the three services and a real
// Prometheus (Debian's package) scraping them every second with the
// project's alert rules, loads documents, and watches
// classifier_documents_processed_total and classifier_outbox_published_total
// rise to the number loaded through Prometheus's HTTP API. It also checks
// every metric family the services expose is listed, with its type, in
// deploy/opstest/exported_metrics.txt (which the alert and dashboard checks
// use), and that every alert rule evaluates without error on real series.
func TestPrometheusScrapesThePipeline(t *testing.T) {
	t.Parallel()
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.Unavailable(t, "prometheus (apt-get install prometheus)", err)
	}
	_, prefix := testenv.Elasticsearch(t)
	pipe := startPipeline(t, prefix, "e2e-prom-"+prefix, nil)
	classifier, publisher, indexManager := pipe.classifier, pipe.publisher, pipe.indexManager

	prom := startPrometheus(t, promBin, map[string]string{
		"classifier":    classifier.addr,
		"publisher":     publisher.addr,
		"index-manager": indexManager.addr,
	})

	// Every target is scraped.
	waitFor(t, 60*time.Second, "Prometheus to scrape all three services (up == 1)", func() bool {
		up, ok := prom.query(t, `sum(up{job=~"classifier|publisher|index-manager"})`)
		return ok && up == 3
	})
	// Nothing was processed yet: the counters start from nothing.
	for _, q := range []string{`sum(classifier_documents_processed_total)`, `sum(classifier_outbox_published_total)`} {
		if v, ok := prom.query(t, q); ok && v != 0 {
			t.Fatalf("%s = %v before loading anything", q, v)
		}
	}

	const count = 30
	runLoader(t, nil, "-count", strconv.Itoa(count), "-sources", prefix+"_news,"+prefix+"_metro", "-seed", "11", "-refresh")

	for _, q := range []string{`sum(classifier_documents_processed_total)`, `sum(classifier_outbox_published_total)`} {
		var last float64
		waitFor(t, 120*time.Second, fmt.Sprintf("%s to reach %d in Prometheus", q, count), func() bool {
			v, ok := prom.query(t, q)
			last = v
			return ok && v >= count
		})
		if last != count {
			t.Errorf("%s = %v, want %d", q, last, count)
		}
	}
	// The histograms the alerts and dashboards use are there too.
	for _, q := range []string{
		`sum(classifier_poller_lag_seconds_count)`,
		`sum(classifier_processing_duration_seconds_count)`,
		`sum(classifier_outbox_publish_lag_seconds_count)`,
	} {
		waitFor(t, 30*time.Second, q+" to reach the documents loaded", func() bool {
			v, ok := prom.query(t, q)
			return ok && v >= count
		})
	}

	prom.checkExportedMetrics(t)
	prom.checkRulesHealthy(t)
}

type prometheus struct {
	addr string
}

// startPrometheus runs prometheus with a temporary configuration scraping
// targets (job name -> address) every second and evaluating the project's
// alert rules, and stops it at cleanup.
func startPrometheus(t *testing.T, bin string, targets map[string]string) *prometheus {
	t.Helper()
	rules, err := filepath.Abs("../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nrule_files:\n  - %q\nscrape_configs:\n", rules)
	for job, addr := range targets {
		fmt.Fprintf(&cfg, "  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", job, addr)
	}
	return &prometheus{addr: testenv.Prometheus(t, bin, cfg.String())}
}

// api GETs a Prometheus HTTP API path into out (the "data" member).
func (p *prometheus) api(t *testing.T, path string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+path, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if body.Status != "success" {
		t.Fatalf("GET %s: %s %s", path, body.Status, body.Error)
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// query evaluates an instant query that yields at most one sample and
// returns its value; ok is false when the result is empty.
func (p *prometheus) query(t *testing.T, q string) (float64, bool) {
	t.Helper()
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	p.api(t, "/api/v1/query?query="+url.QueryEscape(q), &data)
	if len(data.Result) == 0 {
		return 0, false
	}
	if len(data.Result) > 1 {
		t.Fatalf("%s: %d series, want one", q, len(data.Result))
	}
	s, _ := data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%s: value %q: %v", q, s, err)
	}
	return v, true
}

// checkExportedMetrics compares the families Prometheus scraped from the
// services with deploy/opstest/exported_metrics.txt.
func (p *prometheus) checkExportedMetrics(t *testing.T) {
	t.Helper()
	listed := map[string]string{}
	f, err := os.Open("../deploy/opstest/exported_metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && !strings.HasPrefix(fields[0], "#") {
			listed[fields[0]] = fields[1]
		}
	}
	var metadata map[string][]struct {
		Type string `json:"type"`
	}
	p.api(t, "/api/v1/metadata", &metadata)
	ours := 0
	for name, md := range metadata {
		if !strings.HasPrefix(name, "classifier_") && !strings.HasPrefix(name, "publisher_") && !strings.HasPrefix(name, "index_manager_") {
			continue
		}
		ours++
		typ, ok := listed[name]
		if !ok {
			t.Errorf("%s (%s) is exported but not listed in deploy/opstest/exported_metrics.txt", name, md[0].Type)
			continue
		}
		if md[0].Type != typ {
			t.Errorf("%s is a %s on /metrics, listed as a %s", name, md[0].Type, typ)
		}
	}
	if ours < 10 {
		t.Errorf("Prometheus has metadata for only %d service metric families", ours)
	}
}

// checkRulesHealthy fails for any alert rule Prometheus could not evaluate.
func (p *prometheus) checkRulesHealthy(t *testing.T) {
	t.Helper()
	var rules struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	waitFor(t, 30*time.Second, "every alert rule to be evaluated", func() bool {
		p.api(t, "/api/v1/rules", &rules)
		n := 0
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				if r.Health == "unknown" {
					return false
				}
				n++
			}
		}
		return n > 0
	})
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Health != "ok" {
				t.Errorf("rule %s: health %s: %s", r.Name, r.Health, r.LastError)
			}
		}
	}
}
