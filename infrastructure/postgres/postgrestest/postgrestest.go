// Package postgrestest gives a test a migrated database of its own: a fresh
// Postgres database (testenv.Postgres) with a service's migrations applied,
// opened the way the service opens it. It is a package of its own so that
// testenv, which tests of every module use, does not bring the migration
// library to those that never migrate.
package postgrestest

import (
	"context"
	"database/sql"
	"io/fs"
	"testing"

	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

// Migrated creates a database as testenv.Postgres does, applies the
// migrations at the root of fsys and opens a pool on it the way a service
// starts (postgres.OpenMigrated, at its default pool size), closed when the
// test ends. It returns the pool and the database's URL.
func Migrated(t testing.TB, fsys fs.FS) (*sql.DB, string) {
	t.Helper()
	dsn := testenv.Postgres(t)
	db, err := postgres.OpenMigrated(context.Background(), postgres.Config{URL: dsn}, fsys, testenv.Logger(t))
	if err != nil {
		t.Fatalf("migrated database: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, dsn
}

// Strings returns the first column of query's rows, as text, in order: the
// names, definitions or ids a test compares with what it expects.
func Strings(t testing.TB, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("query %q: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("scan %q: %v", query, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read %q: %v", query, err)
	}
	return out
}
