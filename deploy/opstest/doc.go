// Package opstest checks the operations files of the repository: every PromQL
// expression of the Prometheus alert rules and the Grafana dashboards parses
// and names only metrics the services export, and every psql and redis-cli
// command of docs/runbook.md runs against the real services, as do the
// per-database backup and restore tasks of Taskfile.yml (db:backup:classifier,
// db:restore:classifier and the publisher's).
package opstest
