package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// MaxInsertRows is the most rows InsertBatch sends in one statement: the
// multi-row INSERT stays under Postgres's limit of 65,535 bind parameters
// (19 columns a row). Larger batches go out in several statements.
const MaxInsertRows = 3000

// Execer runs a statement: a *sql.DB, *sql.Tx or *sql.Conn.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// InsertBatch writes one row per message with a multi-row INSERT ... ON
// CONFLICT DO NOTHING. A message already in the outbox (the same index,
// content id and version) is left as it is: a document classified again after a crash
// before the classifier's commit point is not published twice, and the
// classifier's INSERT-only role could not update the row anyway. Up to
// MaxInsertRows messages are one statement, so they are written or refused
// together.
func InsertBatch(ctx context.Context, db Execer, msgs []Message) error {
	cols := columns()
	var written []column
	for _, c := range cols {
		if c.written {
			written = append(written, c)
		}
	}
	for start := 0; start < len(msgs); start += MaxInsertRows {
		chunk := msgs[start:min(start+MaxInsertRows, len(msgs))]
		query, args := insertStatement(written, chunk)
		if _, err := db.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("insert outbox rows: %w", err)
		}
	}
	return nil
}

// insertStatement builds the INSERT of msgs and its arguments.
func insertStatement(written []column, msgs []Message) (string, []any) {
	var q strings.Builder
	names := make([]string, len(written))
	for i, c := range written {
		names[i] = c.name
	}
	q.WriteString("INSERT INTO " + Table + " (" + strings.Join(names, ", ") + ") VALUES ")
	args := make([]any, 0, len(msgs)*len(written))
	for i := range msgs {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('(')
		for j, c := range written {
			if j > 0 {
				q.WriteByte(',')
			}
			args = append(args, c.value(&msgs[i]))
			q.WriteString("$" + strconv.Itoa(len(args)))
		}
		q.WriteByte(')')
	}
	q.WriteString(" ON CONFLICT DO NOTHING")
	return q.String(), args
}
