package outbox

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/lib/pq"
)

// IsUnavailable reports whether err means the publisher's database itself
// cannot be used (a *dependency* fault, docs/architecture.md), rather than
// that one statement failed: the connection could not be made or was lost,
// the server is starting up, shutting down or in recovery, refuses the
// credentials or privileges, has no connection slots, memory or disk left,
// or is a read-only standby. Such errors open the Postgres circuit breaker;
// a timeout is decided by the caller (a deadline of its own that passed
// means the database did not answer).
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		code := string(pqErr.Code)
		switch {
		case strings.HasPrefix(code, "08"), // connection exception
			strings.HasPrefix(code, "28"),  // invalid authorization (password, role)
			strings.HasPrefix(code, "53"),  // insufficient resources: disk full, out of memory, too many connections
			strings.HasPrefix(code, "57P"), // admin or crash shutdown, cannot connect now (starting, recovery)
			code == "3D000",                // database does not exist
			code == "25006",                // read-only transaction: connected to a standby
			code == "42501":                // insufficient privilege: the role may not touch the outbox at all
			return true
		}
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
