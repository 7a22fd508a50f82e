// Package dbtest gives a test a classifier database of its own: a fresh
// Postgres database (infrastructure/testenv) with every migration applied,
// open for the test and closed after it.
package dbtest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

// Migrated returns the open database and its URL.
func Migrated(t testing.TB) (*sql.DB, string) {
	t.Helper()
	dsn := testenv.Postgres(t)
	logger := testenv.Logger(t)
	if err := postgres.MigrateUp(dsn, migrations.FS, ".", logger); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(context.Background(), postgres.Config{URL: dsn}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dsn
}

// Strings returns the first column of query's rows, as text, in order.
func Strings(t testing.TB, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
