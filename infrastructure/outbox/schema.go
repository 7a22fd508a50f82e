package outbox

import (
	"context"
	_ "embed" // the test schema
	"fmt"
)

//go:embed testschema.sql
var testSchema string

// TestSchema returns the SQL that creates the outbox table as the
// publisher's migrations leave it, for tests that need the
// table in a scratch database of their own without the publisher's
// migrations. Production databases are migrated by the publisher.
func TestSchema() string { return testSchema }

// ApplyTestSchema creates the outbox table in db with TestSchema. Use it on
// a scratch database only.
func ApplyTestSchema(ctx context.Context, db Execer) error {
	if _, err := db.ExecContext(ctx, testSchema); err != nil {
		return fmt.Errorf("apply outbox test schema: %w", err)
	}
	return nil
}
