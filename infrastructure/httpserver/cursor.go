package httpserver

import (
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// uuidPattern is a UUID in its canonical text form, any case.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsUUID reports whether s is a UUID in canonical form: the ids of the
// dead-letter and outbox rows.
func IsUUID(s string) bool { return uuidPattern.MatchString(s) }

// maxCursorBytes bounds a cursor before it is decoded: a keyset cursor is
// about 70 bytes.
const maxCursorBytes = 256

// Keyset is the position of keyset pagination over rows ordered by
// (created_at, id): the last row of a page. The cursor a client sees is
// its opaque encoding.
type Keyset struct {
	CreatedAt time.Time
	ID        string
}

// EncodeCursor returns the opaque cursor for k.
func EncodeCursor(k Keyset) string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + k.ID))
}

// DecodeCursor reverses EncodeCursor, refusing anything it did not produce
// (a malformed encoding, time or UUID) with a 400 invalid_cursor
// *RequestError.
func DecodeCursor(s string) (Keyset, error) {
	bad := &RequestError{Status: http.StatusBadRequest, Code: CodeInvalidCursor, Message: "cursor is not one this API returned"}
	if len(s) > maxCursorBytes {
		return Keyset{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Keyset{}, bad
	}
	ts, id, ok := strings.Cut(string(raw), "|")
	if !ok || !IsUUID(id) {
		return Keyset{}, bad
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Keyset{}, bad
	}
	return Keyset{CreatedAt: t, ID: id}, nil
}
