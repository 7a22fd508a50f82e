package server

// OverviewQueries are the Overview summary's Prometheus queries, for the
// proxy's allowlist test (the allowlist admits what the summary asks).
func OverviewQueries() []string {
	q := overviewQueries
	return []string{q.Queue, q.DLQ, q.Outbox, q.Classified, q.Published}
}
