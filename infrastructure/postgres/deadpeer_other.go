//go:build !linux

package postgres

import (
	"syscall"
	"time"
)

// userTimeout does nothing where TCP_USER_TIMEOUT is not Linux's: the
// keepalives alone find a dead peer.
func userTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
