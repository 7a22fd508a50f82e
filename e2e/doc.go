// Package e2e holds the end-to-end tests: they build the real service
// binaries, start them against the real PostgreSQL, Redis and Elasticsearch
// of scripts/services.sh, and watch documents travel from the loader to
// Redis.
package e2e
