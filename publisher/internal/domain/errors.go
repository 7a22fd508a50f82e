package domain

import "errors"

// Sentinel errors for the cases callers act on; the API maps them to HTTP
// status codes in one place.
var (
	// ErrNotFound means no outbox entry has the given id.
	ErrNotFound = errors.New("outbox entry not found")
	// ErrConflict means the entry is in a state the operation does not
	// apply to, such as re-queueing a row that is still pending.
	ErrConflict = errors.New("outbox entry is in the wrong state")
)
