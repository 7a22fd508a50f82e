// Package dbtest gives a test a classifier database of its own: a fresh
// Postgres database (infrastructure/testenv) with every migration applied,
// open for the test and closed after it.
package dbtest

import (
	"database/sql"
	"testing"

	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/postgres/postgrestest"
)

// Same shape as publisher/internal/outboxtest.Database: kept apart because
// each service binds postgrestest.Migrated to its own migrations.
//
// Migrated returns the open database and its URL: postgrestest.Migrated
// with the classifier's migrations.
func Migrated(t testing.TB) (*sql.DB, string) {
	t.Helper()
	return postgrestest.Migrated(t, migrations.FS)
}
