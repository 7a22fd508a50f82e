package migrations_test

import (
	"database/sql"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	_ "github.com/lib/pq" // postgres driver

	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

// firstChecked is the first migration whose down this test holds to
// reversing its up exactly; earlier ones carry data seeds their own tests
// check (package rulestore).
const firstChecked = 9

// upTo returns the migrations numbered at most v.
func upTo(t *testing.T, v int) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		n, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			t.Fatalf("migration %s has no number", name)
		}
		if n > v {
			continue
		}
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = &fstest.MapFile{Data: b}
	}
	return out
}

func latest(t *testing.T) int {
	t.Helper()
	names, _ := fs.Glob(migrations.FS, "*.up.sql")
	v := 0
	for _, name := range names {
		n, _ := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		v = max(v, n)
	}
	return v
}

// schema describes every table, column, index, constraint and comment of
// the public schema but the migrator's own table, one line each, sorted.
func schema(t *testing.T, dsn string) []string {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	for _, q := range []string{
		`SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' null=' || is_nullable || ' default=' || COALESCE(column_default, '')
		   FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> 'schema_migrations'`,
		`SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename <> 'schema_migrations'`,
		`SELECT 'constraint ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
		   WHERE connamespace = 'public'::regnamespace AND conrelid <> 'schema_migrations'::regclass`,
		`SELECT 'comment ' || c.relname || '.' || COALESCE(a.attname, '') || ' ' || d.description FROM pg_description d
		   JOIN pg_class c ON c.oid = d.objoid LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.objsubid
		   WHERE c.relnamespace = 'public'::regnamespace`,
		`SELECT 'function ' || proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// Every down from firstChecked on reverses its up: migrating to N and down
// one step leaves the schema of a database migrated to N-1, and up again
// succeeds.
func TestDownReversesUp(t *testing.T) {
	t.Parallel()
	for v := firstChecked; v <= latest(t); v++ {
		t.Run(fmt.Sprintf("%03d", v), func(t *testing.T) {
			t.Parallel()
			before := testenv.Postgres(t)
			if err := postgres.MigrateUp(before, upTo(t, v-1), ".", testenv.Logger(t)); err != nil {
				t.Fatalf("up to %d: %v", v-1, err)
			}
			want := schema(t, before)

			dsn := testenv.Postgres(t)
			mg, err := postgres.NewMigrator(dsn, upTo(t, v), ".", testenv.Logger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer mg.Close()
			if err := mg.Up(); err != nil {
				t.Fatalf("up to %d: %v", v, err)
			}
			if slices.Equal(schema(t, dsn), want) {
				t.Fatalf("migration %d changes nothing this test sees", v)
			}
			if err := mg.Down(1); err != nil {
				t.Fatalf("down %d: %v", v, err)
			}
			got := schema(t, dsn)
			for _, line := range got {
				if !slices.Contains(want, line) {
					t.Errorf("left behind by down %d: %s", v, line)
				}
			}
			for _, line := range want {
				if !slices.Contains(got, line) {
					t.Errorf("missing after down %d: %s", v, line)
				}
			}
			if err := mg.Up(); err != nil {
				t.Fatalf("up %d again: %v", v, err)
			}
		})
	}
}
