package sourcepriority_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/north-cloud/classifier/internal/sourcepriority"
	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

// The poller's view: List has every mark, a source never marked is absent
// (normal), the last Set wins, and an unknown priority is refused without
// touching the table.
func TestStore(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	if err := postgres.MigrateUp(dsn, migrations.FS, ".", testenv.Logger(t)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := sourcepriority.NewStore(db)
	ctx := context.Background()
	if marks, err := s.List(ctx); err != nil || len(marks) != 0 {
		t.Fatalf("List on an empty table = %v, %v", marks, err)
	}
	for _, p := range []sourcepriority.Priority{sourcepriority.Low, sourcepriority.Normal, sourcepriority.Low} {
		if _, err := s.Set(ctx, "backfill", p, "ops"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Set(ctx, "news", sourcepriority.Normal, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ctx, "news", "urgent", "ops"); err == nil {
		t.Fatal("Set accepted priority urgent")
	}
	marks, err := s.List(ctx)
	if err != nil || len(marks) != 2 || marks["backfill"] != sourcepriority.Low || marks["news"] != sourcepriority.Normal {
		t.Fatalf("List = %v, %v; want backfill low and news normal", marks, err)
	}
	if m, err := s.Get(ctx, "elsewhere"); err != nil || m.Priority != sourcepriority.Normal || m.UpdatedAt != nil {
		t.Fatalf("Get of an unmarked source = %+v, %v", m, err)
	}
	for in, ok := range map[string]bool{"low": true, "normal": true, "LOW": false, "": false, "high": false} {
		if _, err := sourcepriority.Parse(in); (err == nil) != ok {
			t.Errorf("Parse(%q) error = %v, want ok=%t", in, err, ok)
		}
	}
}
