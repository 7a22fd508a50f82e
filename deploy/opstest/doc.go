// Package opstest checks the operations files of the repository: every PromQL
// expression of the Prometheus alert rules and the Grafana dashboards parses
// and names only metrics the services export, and every psql and redis-cli
// command of docs/runbook.md runs against the real services.
package opstest
