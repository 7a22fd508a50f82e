package server

// OverviewQueries are the Overview summary's Prometheus queries, for the
// proxy's allowlist test (the allowlist admits what the summary asks): the
// throughput's over every range, of all sources and of one.
func OverviewQueries() []string {
	q := overviewQueries
	out := []string{q.Queue, q.DLQ, q.Outbox}
	for rng := range overviewRanges {
		for _, source := range []string{"", "metro"} {
			out = append(out, throughputQuery(q.Classified, rng, source), throughputQuery(q.Published, rng, source))
		}
	}
	return out
}

// ThroughputQuery is throughputQuery, for the test of the queries against a
// real Prometheus across a restart.
func ThroughputQuery(classified bool, rng, source string) string {
	if classified {
		return throughputQuery(overviewQueries.Classified, rng, source)
	}
	return throughputQuery(overviewQueries.Published, rng, source)
}
