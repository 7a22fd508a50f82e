package server

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// PromMetrics are the metric names a query through the proxy may select:
// the series the Overview's charts read (dashboard/src/views/OverviewView.vue,
// PROM_QUERIES) and its throughput per source (SourceThroughput.vue). Anything else Prometheus holds (other services, the
// databases' exporters, Prometheus itself) stays out of reach.
var PromMetrics = []string{
	"classifier_dlq_backlog",
	"classifier_dlq_depth",
	"classifier_documents_processed_total",
	"classifier_outbox_backlog",
	"classifier_publications_total",
	"classifier_queue_depth",
}

// PromFunctions are the aggregations and functions a query may use: the
// charts' sum, the other plain aggregations, and the range functions a
// chart of a gauge or counter would need. Functions that build labels from
// strings, sort, or read across series (label_replace, topk, count_values,
// absent, ...) are refused.
var PromFunctions = []string{
	"avg", "count", "max", "min", "sum",
	"avg_over_time", "increase", "max_over_time", "min_over_time", "rate",
}

// promRangeMax bounds range selectors ([7d]), subqueries and offsets, as it
// bounds query_range: the charts look back at most a week.
const promRangeMax = 7 * 24 * time.Hour

// promPointsMax is Prometheus's own limit of points per series, applied to
// query_range and to each subquery (range / step).
const promPointsMax = 11_000

// errQueryRefused marks a query outside the proxy's allowlist or bounds.
var errQueryRefused = errors.New("query refused")

// promPolicy checks a PromQL expression against the allowlists and bounds
// before Prometheus sees it. It parses with Prometheus's own parser, so what
// is checked is what Prometheus evaluates.
type promPolicy struct {
	parser    parser.Parser
	metrics   map[string]bool
	functions map[string]bool
}

func newPromPolicy() promPolicy {
	set := func(names []string) map[string]bool {
		m := make(map[string]bool, len(names))
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	// Experimental functions, duration expressions and extended range
	// selectors stay off: they are parse errors here.
	return promPolicy{parser: parser.NewParser(parser.Options{}), metrics: set(PromMetrics), functions: set(PromFunctions)}
}

// check returns nil when query parses and stays within the allowlists and
// bounds, else an error wrapping errQueryRefused that says why, in words an
// operator can act on.
func (p promPolicy) check(query string) error {
	expr, err := p.parser.ParseExpr(query)
	if err != nil {
		return fmt.Errorf("%w: not valid PromQL: %s", errQueryRefused, firstLine(err.Error()))
	}
	return parser.Walk(p, expr, nil)
}

// Visit is parser.Visitor: it checks one node and returns the policy to
// walk its children.
func (p promPolicy) Visit(node parser.Node, path []parser.Node) (parser.Visitor, error) {
	var err error
	switch n := node.(type) {
	case nil:
		return nil, nil
	case *parser.VectorSelector:
		err = p.checkSelector(n)
	case *parser.MatrixSelector:
		err = checkDuration("a range selector", n.Range, n.RangeExpr)
	case *parser.SubqueryExpr:
		err = checkSubquery(n, path)
	case *parser.AggregateExpr:
		if name := n.Op.String(); !p.functions[name] {
			err = refused("the aggregation %s is not allowed (allowed: %s)", name, strings.Join(PromFunctions, ", "))
		}
	case *parser.Call:
		if !p.functions[n.Func.Name] {
			err = refused("the function %s is not allowed (allowed: %s)", n.Func.Name, strings.Join(PromFunctions, ", "))
		}
	case *parser.BinaryExpr, *parser.ParenExpr, *parser.UnaryExpr, *parser.NumberLiteral:
	case *parser.StringLiteral:
		err = refused("string literals are not allowed")
	default:
		err = refused("%T is not allowed", node)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// checkSelector admits a selector of one allowed metric, named as such (not
// through a __name__ regular expression), without an @ modifier, and with
// an offset of at most promRangeMax.
func (p promPolicy) checkSelector(vs *parser.VectorSelector) error {
	if vs.Name == "" {
		return refused("a selector must name its metric, one of: %s", strings.Join(PromMetrics, ", "))
	}
	if !p.metrics[vs.Name] {
		return refused("the metric %q is not allowed (allowed: %s)", vs.Name, strings.Join(PromMetrics, ", "))
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && (m.Type != labels.MatchEqual || m.Value != vs.Name) {
			return refused("%s matchers are not allowed", labels.MetricName)
		}
	}
	if vs.Timestamp != nil || vs.StartOrEnd != 0 {
		return refused("the @ modifier is not allowed")
	}
	return checkOffset(vs.OriginalOffset, vs.OriginalOffsetExpr)
}

// checkSubquery admits a subquery that is not inside another one (path
// holds the node's ancestors), of a fixed range of at most promRangeMax, an
// explicit step giving at most promPointsMax steps (range / step: [1h:1m]
// is 60), no @ modifier and an offset within promRangeMax. A nested
// subquery multiplies its steps by the outer one's (up to 11,000² inner
// evaluations), so it is refused whatever its bounds.
func checkSubquery(sq *parser.SubqueryExpr, path []parser.Node) error {
	for _, n := range path {
		if _, ok := n.(*parser.SubqueryExpr); ok {
			return refused("nested subqueries are not allowed (a subquery inside another's range)")
		}
	}
	if err := checkDuration("a subquery", sq.Range, sq.RangeExpr); err != nil {
		return err
	}
	if sq.StepExpr != nil || sq.Step <= 0 {
		return refused("a subquery needs an explicit step ([range:step])")
	}
	if sq.Range/sq.Step > promPointsMax {
		return refused("a subquery may have at most %d steps (range / step: [1h:1m] is 60); this one has %d", promPointsMax, int64(sq.Range/sq.Step))
	}
	if sq.Timestamp != nil || sq.StartOrEnd != 0 {
		return refused("the @ modifier is not allowed")
	}
	return checkOffset(sq.OriginalOffset, sq.OriginalOffsetExpr)
}

func checkDuration(what string, d time.Duration, expr *parser.DurationExpr) error {
	if expr != nil || d <= 0 || d > promRangeMax {
		return refused("%s must be a fixed duration of at most %s", what, promRangeMaxText)
	}
	return nil
}

func checkOffset(d time.Duration, expr *parser.DurationExpr) error {
	if expr != nil || d > promRangeMax || d < -promRangeMax {
		return refused("an offset must be a fixed duration of at most %s", promRangeMaxText)
	}
	return nil
}

// promRangeMaxText is promRangeMax as PromQL writes it.
const promRangeMaxText = "7d"

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errQueryRefused, fmt.Sprintf(format, args...))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
