package opstest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

const root = "../.."

// promParser parses PromQL as Prometheus does (default options).
var promParser = parser.NewParser(parser.Options{})

// exportedMetric is one line of exported_metrics.txt.
type exportedMetric struct {
	Name, Type, Service string
}

func loadExported(t *testing.T) map[string]exportedMetric {
	t.Helper()
	f, err := os.Open("exported_metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]exportedMetric{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("exported_metrics.txt: want `name type service`, got %q", line)
		}
		out[fields[0]] = exportedMetric{Name: fields[0], Type: fields[1], Service: fields[2]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// expression is one PromQL expression and where it was found.
type expression struct {
	where string
	expr  string
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/prometheus/alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	return rf
}

func ruleExpressions(t *testing.T) []expression {
	t.Helper()
	var out []expression
	for _, g := range loadRules(t).Groups {
		for i, r := range g.Rules {
			out = append(out, expression{fmt.Sprintf("alerts.yml group %s rule %d (%s %s)", g.Name, i, r.Alert, r.Labels["severity"]), r.Expr})
		}
	}
	return out
}

type dashboardPanel struct {
	ID         int              `json:"id"`
	Type       string           `json:"type"`
	Title      string           `json:"title"`
	Datasource *datasourceRef   `json:"datasource"`
	Targets    []panelTarget    `json:"targets"`
	Panels     []dashboardPanel `json:"panels"` // collapsed rows
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panelTarget struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource *datasourceRef `json:"datasource"`
}

type dashboard struct {
	UID    string           `json:"uid"`
	Title  string           `json:"title"`
	Panels []dashboardPanel `json:"panels"`
}

func loadDashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "deploy/grafana/dashboards/*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no dashboards in deploy/grafana/dashboards")
	}
	out := map[string]dashboard{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = d
	}
	return out
}

func allPanels(ps []dashboardPanel) []dashboardPanel {
	var out []dashboardPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

func dashboardExpressions(t *testing.T) []expression {
	t.Helper()
	var out []expression
	for file, d := range loadDashboards(t) {
		for _, p := range allPanels(d.Panels) {
			for _, tg := range p.Targets {
				out = append(out, expression{fmt.Sprintf("%s panel %d %q target %s", file, p.ID, p.Title, tg.RefID), tg.Expr})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out
}

// metricNames returns the metric names an expression selects.
func metricNames(e parser.Expr) []string {
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
		}
		names = append(names, name)
		return nil
	})
	return names
}

// checkNames fails for every name that is not an exported series: a
// histogram is only selectable as _bucket, _sum or _count.
func checkNames(t *testing.T, exported map[string]exportedMetric, where string, names []string) {
	t.Helper()
	for _, n := range names {
		if n == "" {
			t.Errorf("%s: selector without a metric name", where)
			continue
		}
		if m, ok := exported[n]; ok {
			if m.Type == "histogram" {
				t.Errorf("%s: %s is a histogram: select %s_bucket, _sum or _count", where, n, n)
			}
			continue
		}
		found := false
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if m, ok := exported[strings.TrimSuffix(n, suffix)]; ok && strings.HasSuffix(n, suffix) && m.Type == "histogram" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: metric %s is not exported by any service (deploy/opstest/exported_metrics.txt)", where, n)
		}
	}
}

func TestAlertRuleExpressionsParseAndUseExportedMetrics(t *testing.T) {
	exported := loadExported(t)
	exprs := ruleExpressions(t)
	if len(exprs) == 0 {
		t.Fatal("no rules in alerts.yml")
	}
	for _, e := range exprs {
		parsed, err := promParser.ParseExpr(e.expr)
		if err != nil {
			t.Errorf("%s: %v\n%s", e.where, err, e.expr)
			continue
		}
		checkNames(t, exported, e.where, metricNames(parsed))
	}
}

func TestAlertRulesHaveSeverityAndRunbook(t *testing.T) {
	runbook, err := os.ReadFile(filepath.Join(root, "docs/runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := markdownAnchors(string(runbook))
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: summary and description annotations are required", r.Alert)
			}
			url := r.Annotations["runbook_url"]
			anchor, ok := strings.CutPrefix(url, "docs/runbook.md#")
			if !ok || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q does not name a heading of docs/runbook.md", r.Alert, url)
			}
		}
	}
}

// markdownAnchors returns GitHub-style anchors of every heading.
func markdownAnchors(md string) map[string]bool {
	out := map[string]bool{}
	nonWord := regexp.MustCompile(`[^a-z0-9 _-]`)
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		h = nonWord.ReplaceAllString(h, "")
		out[strings.ReplaceAll(h, " ", "-")] = true
	}
	return out
}

// TestAlertTableCovered checks every row of the spec's alert table (section
// 6.1) has a warning and a critical rule comparing its metric with the
// table's thresholds.
func TestAlertTableCovered(t *testing.T) {
	rows := []struct {
		metric             string
		warning, critical  float64
		warnOp, criticalOp string
	}{
		{"classifier_queue_depth", 300, 450, ">", ">"},
		{"classifier_dlq_depth", 50, 200, ">", ">"},
		{"classifier_poller_lag_seconds_bucket", 300, 900, ">", ">"},
		{"classifier_outbox_backlog", 500, 2000, ">", ">"},
		// The histogram's largest finite bucket is 120s (see alerts.yml).
		{"classifier_outbox_publish_lag_seconds_bucket", 30, 120, ">", ">="},
		// Per minute: rate() is per second, the rule multiplies by 60.
		{"classifier_documents_failed_total", 1, 10, ">", ">"},
	}
	rules := loadRules(t)
	for _, row := range rows {
		got := map[string][]string{}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				parsed, err := promParser.ParseExpr(r.Expr)
				if err != nil {
					continue // reported by the parse test
				}
				if !contains(metricNames(parsed), row.metric) {
					continue
				}
				if b, ok := parsed.(*parser.BinaryExpr); ok {
					if n, ok := b.RHS.(*parser.NumberLiteral); ok {
						got[r.Labels["severity"]] = append(got[r.Labels["severity"]], b.Op.String()+" "+strconv.FormatFloat(n.Val, 'f', -1, 64))
					}
				}
			}
		}
		wantWarn := row.warnOp + " " + strconv.FormatFloat(row.warning, 'f', -1, 64)
		wantCrit := row.criticalOp + " " + strconv.FormatFloat(row.critical, 'f', -1, 64)
		if !contains(got["warning"], wantWarn) {
			t.Errorf("%s: no warning rule with `%s` (found %v)", row.metric, wantWarn, got["warning"])
		}
		if !contains(got["critical"], wantCrit) {
			t.Errorf("%s: no critical rule with `%s` (found %v)", row.metric, wantCrit, got["critical"])
		}
	}
}

func TestDashboardExpressionsParseAndUseExportedMetrics(t *testing.T) {
	exported := loadExported(t)
	exprs := dashboardExpressions(t)
	for _, e := range exprs {
		if strings.TrimSpace(e.expr) == "" {
			t.Errorf("%s: empty expression", e.where)
			continue
		}
		parsed, err := promParser.ParseExpr(e.expr)
		if err != nil {
			t.Errorf("%s: %v\n%s", e.where, err, e.expr)
			continue
		}
		checkNames(t, exported, e.where, metricNames(parsed))
	}
	t.Logf("%d panel expressions parsed", len(exprs))
}

// TestDashboardsUseProvisionedDatasource checks every panel and target names
// the data source provisioned in deploy/grafana/provisioning/datasources.
func TestDashboardsUseProvisionedDatasource(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "deploy/grafana/provisioning/datasources/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var prov struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(b, &prov); err != nil {
		t.Fatal(err)
	}
	if len(prov.Datasources) != 1 || prov.Datasources[0].Type != "prometheus" {
		t.Fatalf("want one prometheus data source, got %+v", prov.Datasources)
	}
	uid := prov.Datasources[0].UID
	uids := map[string]string{}
	for file, d := range loadDashboards(t) {
		if d.UID == "" {
			t.Errorf("%s: dashboard without uid", file)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %q", file, other, d.UID)
		}
		uids[d.UID] = file
		for _, p := range allPanels(d.Panels) {
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != uid {
				t.Errorf("%s panel %q: datasource %+v, want uid %q", file, p.Title, p.Datasource, uid)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s panel %q has no query", file, p.Title)
			}
			for _, tg := range p.Targets {
				if tg.Datasource == nil || tg.Datasource.UID != uid {
					t.Errorf("%s panel %q target %s: datasource %+v, want uid %q", file, p.Title, tg.RefID, tg.Datasource, uid)
				}
			}
		}
	}
}

// TestSpecGrafanaQueriesOnDashboards checks every Grafana query of the
// original design (the spec) is on a dashboard, verbatim, or as the documented
// replacement where that query is wrong for this system.
func TestSpecGrafanaQueriesOnDashboards(t *testing.T) {
	spec := map[string]string{
		`rate(classifier_documents_processed_total[5m])`: "",
		// classifier_documents_failed_total carries {source, error_code}, the
		// processed counter {source}: the spec's division matches no series.
		`rate(classifier_documents_failed_total[5m]) / rate(classifier_documents_processed_total[5m]) * 100`: `sum by (source) (rate(classifier_documents_failed_total[5m])) / sum by (source) (rate(classifier_documents_processed_total[5m])) * 100`,
		`histogram_quantile(0.95, rate(classifier_processing_duration_seconds_bucket[5m]))`:                  "",
		// Every replica reports the whole table: sum would count it N times.
		`sum by (source) (classifier_dlq_depth)`:                                            "max by (source) (classifier_dlq_depth)",
		`histogram_quantile(0.99, rate(classifier_outbox_publish_lag_seconds_bucket[5m]))`:  "",
		`histogram_quantile(0.95, rate(classifier_rule_match_duration_seconds_bucket[5m]))`: "",
		`rate(classifier_outbox_published_total[5m])`:                                       "", // the publisher's drain rate
		`histogram_quantile(0.50, rate(classifier_outbox_publish_lag_seconds_bucket[5m]))`:  "", // publisher lag p50
		`max by (status) (classifier_outbox_backlog)`:                                       "", // backlog by status
		`publisher_redis_breaker_state`:                                                     "", // breaker state
		`sum by (result) (rate(index_manager_stats_samples_total[5m]))`:                     "", // index-manager
	}
	on := map[string]bool{}
	for _, e := range dashboardExpressions(t) {
		if p, err := promParser.ParseExpr(e.expr); err == nil {
			on[p.String()] = true
		}
	}
	for query, replacement := range spec {
		want := query
		if replacement != "" {
			want = replacement
		}
		p, err := promParser.ParseExpr(want)
		if err != nil {
			t.Errorf("%s: %v", want, err)
			continue
		}
		if !on[p.String()] {
			t.Errorf("no dashboard panel queries %s", want)
		}
	}
}

// TestExportedMetricsDeclaredInServices keeps exported_metrics.txt honest:
// each service metric is declared, under its name (a counter may be declared
// without the _total the exporter appends), in its service's non-test code.
func TestExportedMetricsDeclaredInServices(t *testing.T) {
	sources := map[string]string{}
	for _, svc := range []string{"classifier", "publisher", "index-manager", "dashboard"} {
		var sb strings.Builder
		err := filepath.WalkDir(filepath.Join(root, svc), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sb.Write(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sources[svc] = sb.String()
	}
	// Request metrics are named <service prefix> + a suffix declared in the
	// shared HTTP server.
	httpSrc, err := os.ReadFile(filepath.Join(root, "infrastructure", "httpserver", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range loadExported(t) {
		src, ok := sources[m.Service]
		if !ok {
			continue // runtime and Prometheus series
		}
		declared := strings.Contains(src, strconv.Quote(m.Name))
		if !declared && m.Type == "counter" {
			declared = strings.Contains(src, strconv.Quote(strings.TrimSuffix(m.Name, "_total")))
		}
		if prefix := strings.ReplaceAll(m.Service, "-", "_") + "_http_"; !declared && strings.HasPrefix(m.Name, prefix) {
			declared = strings.Contains(string(httpSrc), strconv.Quote(strings.TrimPrefix(m.Name, strings.ReplaceAll(m.Service, "-", "_"))))
		}
		if !declared {
			t.Errorf("%s (%s) is not declared in %s's code", m.Name, m.Type, m.Service)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
