package fault_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	_ "github.com/lib/pq"

	"github.com/north-cloud/infrastructure/fault"
	"github.com/north-cloud/infrastructure/testenv"
)

// Against a real Postgres: the statement that touches one row twice (the
// NUL-twin failure) is the statement's, and the database answers its
// probe; a pool that cannot be used is the dependency's, proved by the same
// probe; a port nothing listens on is an outage by its error alone.
func TestPostgresAgainstARealDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("postgres", testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, `CREATE TABLE twins (id text PRIMARY KEY, n int)`); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO twins VALUES ('poison', 1), ('poison', 2)
		ON CONFLICT (id) DO UPDATE SET n = EXCLUDED.n`)
	if got := fault.PostgresProved(ctx, err, fault.PingPostgres(db)); got != fault.Statement {
		t.Errorf("row affected twice (%v): %s, want statement", err, got)
	}

	closed, err := sql.Open("postgres", testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	_, err = closed.ExecContext(ctx, `SELECT 1`)
	if k := fault.Postgres(err); k != fault.Ambiguous {
		t.Errorf("closed pool (%v): %s before the probe, want ambiguous", err, k)
	}
	if got := fault.PostgresProved(ctx, err, fault.PingPostgres(closed)); got != fault.Dependency {
		t.Errorf("closed pool (%v): %s, want dependency", err, got)
	}

	nowhere, err := sql.Open("postgres", fmt.Sprintf("postgres://x:y@127.0.0.1:%d/z?sslmode=disable", testenv.FreePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nowhere.Close() })
	_, err = nowhere.ExecContext(ctx, `SELECT 1`)
	if got := fault.Postgres(err); got != fault.Dependency {
		t.Errorf("nothing listening (%v): %s, want dependency", err, got)
	}
}

// One bulk's 429 and 5xx items are the cluster's only when its probe fails;
// the probe is made once per bulk answer, and never for items that are
// their own fault.
func TestItemProverProvesItemOutagesOnce(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		probeErr error
		want     fault.Kind
	}{
		{"the cluster answers: the item's index is at fault", nil, fault.Transient},
		{"the cluster fails its probe: an outage", errors.New("connection refused"), fault.Dependency},
	} {
		probes := 0
		p := fault.ItemProver{Probe: func(context.Context) error { probes++; return c.probeErr }}
		if k := p.Kind(ctx, 400, "mapper_parsing_exception"); k != fault.Statement {
			t.Errorf("%s: a 400 item is %v, want statement", c.name, k)
		}
		if probes != 0 {
			t.Errorf("%s: a statement item probed the cluster", c.name)
		}
		for _, status := range []int{429, 503, 500} {
			if k := p.Kind(ctx, status, "cluster_block_exception"); k != c.want {
				t.Errorf("%s: a %d item is %v, want %v", c.name, status, k, c.want)
			}
		}
		if probes != 1 {
			t.Errorf("%s: %d probes for one bulk answer, want 1", c.name, probes)
		}
	}
}
