package rulestore_test

import (
	"context"
	"database/sql"
	"github.com/north-cloud/classifier/internal/dbtest"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/rulestore"
)

// bundle is what a test gets from setup: the repository under test over a
// fresh, migrated database of its own (default rules included).
type bundle struct {
	repo *rulestore.Repository
	db   *sql.DB
	dsn  string
}

func setup(t *testing.T) bundle {
	t.Helper()
	db, dsn := dbtest.Migrated(t)
	return bundle{repo: rulestore.NewRepository(db), db: db, dsn: dsn}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// clearRules deletes every rule (the seeded defaults included), so a test
// starts from an empty rule set.
func clearRules(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec(`DELETE FROM classification_rules`); err != nil {
		t.Fatalf("clear rules: %v", err)
	}
}

func validInput(name string) rulestore.Input {
	return rulestore.Input{
		Name:          name,
		Topic:         "violent_crime",
		Keywords:      []string{"shooting", "stabbing", "homicide"},
		MinConfidence: 0.2,
		Priority:      10,
		Enabled:       true,
	}
}
