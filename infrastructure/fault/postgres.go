package fault

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/lib/pq"
)

// Postgres classifies an error of a Postgres statement from the error
// alone:
//
//   - Dependency: an availability error. The connection could not be made
//     or was lost (class 08, and the driver's connection errors: a network
//     error, a bad or closed connection, EOF, refused, reset, broken pipe),
//     the credentials are refused (28), the server has no connection
//     slots, memory or disk (53), is shutting down, starting or in recovery
//     (57P), the database does not exist (3D000), is a read-only standby
//     (25006), or the role may not use the table at all (42501).
//   - Transient: a serialization failure or deadlock (class 40), a
//     statement cancelled or timed out (57014), our own context cancelled.
//   - Statement: anything else the server answered (a row touched twice
//     (21000), invalid data (22), a constraint (23), a plan or object
//     error (42), a trigger's exception (P0001), an internal error (XX),
//     ...), and a value the driver could not encode.
//   - Ambiguous: a deadline of our own that passed, or an error the driver
//     does not explain; PostgresProved settles it with a probe.
func Postgres(err error) Kind {
	if err == nil {
		return Transient
	}
	var pe *pq.Error
	if errors.As(err, &pe) {
		code := string(pe.Code)
		switch {
		case unavailableCode(code):
			return Dependency
		case strings.HasPrefix(code, "40"), code == "57014":
			return Transient
		default:
			return Statement
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Transient
	case errors.Is(err, context.DeadlineExceeded):
		return Ambiguous
	case connectionLost(err):
		return Dependency
	case strings.Contains(err.Error(), "converting argument"):
		return Statement // database/sql could not encode one row's value
	default:
		return Ambiguous
	}
}

// PostgresUnavailable reports whether err alone shows the database is out
// (Postgres(err) == Dependency). An Ambiguous error is not reported: the
// caller proves it (PostgresProved) or decides.
func PostgresUnavailable(err error) bool { return Postgres(err) == Dependency }

// PostgresProved classifies err (Postgres) and, when the error does not
// tell, asks probe whether the database answers (Proved).
func PostgresProved(ctx context.Context, err error, probe Probe) Kind {
	return Proved(ctx, Postgres(err), probe)
}

// PostgresInvalid reports whether err refuses a row's data for good: a
// data exception or an integrity violation (class 22, 23), or a value the
// driver could not encode. Such a row can never be stored as it is; any
// other statement error may pass another time.
func PostgresInvalid(err error) bool {
	var pe *pq.Error
	if errors.As(err, &pe) {
		class := string(pe.Code.Class())
		return class == "22" || class == "23"
	}
	return err != nil && strings.Contains(err.Error(), "converting argument")
}

// PingPostgres is the probe of a database: SELECT 1 on a connection of db.
func PingPostgres(db *sql.DB) Probe {
	return func(ctx context.Context) error {
		_, err := db.ExecContext(ctx, "SELECT 1")
		return err
	}
}

// unavailableCode reports the SQLSTATEs of an unusable database.
func unavailableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "28"),  // invalid authorization (password, role)
		strings.HasPrefix(code, "53"),  // insufficient resources: disk full, out of memory, too many connections
		strings.HasPrefix(code, "57P"), // admin or crash shutdown, cannot connect now (starting, recovery)
		code == "3D000",                // database does not exist
		code == "25006",                // read-only transaction: connected to a standby
		code == "42501":                // insufficient privilege: the role may not touch the table at all
		return true
	}
	return false
}

// connectionLost reports an error of the connection rather than of a
// statement: the network, a connection the pool or the server closed.
func connectionLost(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
