// Package audit is the one audit log of every service: who (the token's
// subject and role) did what (method, route, path parameters, a short
// summary), how it ended (outcome and status) and when, in the service's
// own database (table audit_log, the same shape in every service). Its
// Middleware records every mutating route after the handler; a handler
// that must not run unrecorded (the index-manager's index operations)
// writes a pending entry first with Store.Begin and finishes it.
package audit

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Outcomes of an entry. An entry written with Begin is pending until it is
// finished.
const (
	OutcomePending = "pending"
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	// OutcomeDenied is a request refused for its token's role (403).
	OutcomeDenied = "denied"
)

// ListLimitDefault and ListLimitMax bound one page of List.
const (
	ListLimitDefault = 50
	ListLimitMax     = 500
)

// Byte bounds of one entry. Parameters are stored up to
// MaxParametersBytes (larger ones are replaced by a truncation marker
// holding an excerpt), error text and summaries up to MaxErrorBytes and
// MaxSummaryBytes, and actors are escaped and cut to MaxActorChars. List
// applies the same bounds to rows written before these limits existed, so
// a page of List is at most ListLimitMax entries of about MaxEntryBytes
// each.
const (
	MaxParametersBytes = 8 << 10
	MaxErrorBytes      = 2 << 10
	MaxSummaryBytes    = 1 << 10
	MaxActorChars      = 255
	// MaxEntryBytes is a generous bound on one entry's JSON size.
	MaxEntryBytes = MaxParametersBytes + MaxErrorBytes + MaxSummaryBytes + 4*MaxActorChars + 2048
	// excerptBytes is the size of the excerpt a truncation marker keeps.
	excerptBytes = 4 << 10
)

// TruncatedMarker is the key a truncated parameters object carries
// (true), alongside "original_bytes" and "excerpt" (the start of the
// original JSON text).
const TruncatedMarker = "_truncated"

// Entry is one audit log row.
type Entry struct {
	ID int64 `json:"id"`
	// Actor is the token's subject (SafeActor).
	Actor string `json:"actor"`
	// Role is the token's role.
	Role string `json:"role"`
	// Method and Route are the request's method and route pattern
	// ("/api/v1/rules/:id").
	Method string `json:"method"`
	Route  string `json:"route"`
	// Action is a short name of the operation when the handler gives one
	// (the index-manager's create, delete, refresh); empty otherwise.
	Action string `json:"action"`
	// Target is the object acted on when the handler names it (an index).
	Target string `json:"target"`
	// Parameters are the path parameters and the query string, or what the
	// handler recorded.
	Parameters map[string]any `json:"parameters"`
	// Summary is what the handler said it did, or the start of the
	// request body.
	Summary    string     `json:"summary,omitempty"`
	Outcome    string     `json:"outcome"`
	StatusCode *int       `json:"status_code"`
	Error      string     `json:"error,omitempty"`
	RequestID  string     `json:"request_id,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// OutcomeOf is the outcome of a finished request with status.
func OutcomeOf(status int) string {
	switch {
	case status == 401 || status == 403:
		return OutcomeDenied
	case status >= 400:
		return OutcomeFailure
	}
	return OutcomeSuccess
}

// BoundParameters returns p (a JSON object) unchanged when it fits in
// MaxParametersBytes, and otherwise a marker object
// {"_truncated": true, "original_bytes": n, "excerpt": "<start of p>"} that
// does.
func BoundParameters(p []byte) []byte {
	if len(p) <= MaxParametersBytes {
		return p
	}
	for n := excerptBytes; n > 0; n /= 2 {
		out, err := json.Marshal(map[string]any{
			TruncatedMarker: true, "original_bytes": len(p), "excerpt": cutUTF8(string(p), n),
		})
		if err == nil && len(out) <= MaxParametersBytes {
			return out
		}
	}
	out, _ := json.Marshal(map[string]any{TruncatedMarker: true, "original_bytes": len(p)})
	return out
}

// truncatedSuffix marks text cut by BoundText.
const truncatedSuffix = " ...[truncated]"

// BoundText cuts s to at most maxBytes (on a character boundary), ending
// it with a marker when it was cut, and replaces invalid UTF-8 and NUL
// characters, which Postgres text cannot hold.
func BoundText(s string, maxBytes int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= maxBytes {
		return s
	}
	return cutUTF8(s, maxBytes-len(truncatedSuffix)) + truncatedSuffix
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// SafeActor is the form an actor (a token's subject) is stored and listed
// in. A subject of printable characters is kept as it is; one with control
// characters (newlines, ANSI escapes, NUL), invalid UTF-8 or other
// non-printing characters is stored quoted and escaped in Go syntax
// (strconv.QuoteToGraphic: "\"evil\\n\\x1b[31m\""), so it can neither forge
// log lines nor drive a terminal. The result is at most MaxActorChars
// characters (the column's size).
func SafeActor(actor string) string {
	for _, r := range actor {
		if r == utf8.RuneError || !unicode.IsGraphic(r) {
			actor = strconv.QuoteToGraphic(actor)
			break
		}
	}
	if utf8.RuneCountInString(actor) <= MaxActorChars {
		return actor
	}
	const marker = "..."
	runes := []rune(actor)
	return string(runes[:MaxActorChars-len(marker)]) + marker
}

// MaxPageBytes bounds the JSON size of one page of entries served by the
// API; a page that would be larger ends early (FitPage).
const MaxPageBytes = 1 << 20

// FitPage returns the leading entries whose JSON encodings add up to at
// most maxBytes (always at least one entry), and whether any were left
// out.
func FitPage(entries []Entry, maxBytes int) ([]Entry, bool) {
	total := 0
	for i, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return entries[:i], true
		}
		total += len(b) + 1
		if total > maxBytes && i > 0 {
			return entries[:i], true
		}
	}
	return entries, false
}
