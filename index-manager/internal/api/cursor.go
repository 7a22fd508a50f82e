package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// errCursor marks a documents cursor that is malformed, forged, for another
// index, or expired: 400.
var errCursor = errors.New("invalid cursor")

// cursor is the state of deep pagination through the documents endpoint:
// the sort and the sort values of the last hit returned (search_after). No
// point in time is kept open between pages (an abandoned listing would
// hold a search context until it expired); the sort ends with the unique
// id field, which makes the order total and stable. It is handed to the
// client signed, so a client cannot alter the sort or point it at another
// index.
type cursor struct {
	Index       string      `json:"i"`
	SearchAfter []any       `json:"a"`
	Sort        []SortField `json:"s,omitempty"`
}

// cursorCodec signs and verifies cursors with an HMAC key.
type cursorCodec struct {
	key []byte
}

func (cc cursorCodec) encode(c cursor) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(cc.sign(p)), nil
}

func (cc cursorCodec) sign(payload string) []byte {
	m := hmac.New(sha256.New, cc.key)
	m.Write([]byte("index-manager documents cursor v2\x00"))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

func (cc cursorCodec) decode(s, index string) (cursor, error) {
	p, sig, ok := strings.Cut(s, ".")
	if !ok || len(s) > 16<<10 {
		return cursor{}, fmt.Errorf("%w: malformed", errCursor)
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, cc.sign(p)) {
		return cursor{}, fmt.Errorf("%w: bad signature", errCursor)
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return cursor{}, fmt.Errorf("%w: malformed", errCursor)
	}
	var c cursor
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return cursor{}, fmt.Errorf("%w: malformed", errCursor)
	}
	if c.Index != index {
		return cursor{}, fmt.Errorf("%w: it belongs to another index", errCursor)
	}
	return c, nil
}
