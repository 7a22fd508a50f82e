package deadletter

import (
	"regexp"
	"strings"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/domain"
)

// PermanentAfterDefault is how many consecutive identical failures make an
// entry permanent.
const PermanentAfterDefault = 3

// maxSignatureChars bounds a stored signature: enough to tell two failures
// apart, short enough to quote in a reason.
const maxSignatureChars = 300

// The parts of an error message that change from one attempt to the next
// without changing what went wrong, replaced in this order (a URL may hold
// an address, an address may hold numbers); ids and numbers come last.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`), "<url>"},
	{regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`), "<uuid>"},
	{regexp.MustCompile(`\[[0-9a-fA-F:]*:[0-9a-fA-F:.]*\](:\d+)?`), "<addr>"},
	{regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b`), "<addr>"},
	{regexp.MustCompile(`\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b`), "<email>"},
	{regexp.MustCompile(`\b0x[0-9a-fA-F]+\b`), "<ptr>"},
}

var (
	number     = regexp.MustCompile(`\d+(\.\d+)?`)
	whitespace = regexp.MustCompile(`\s+`)
)

// token is a run of the characters ids are made of (request ids, hashes,
// Elasticsearch ids, trace ids); one of 8 or more that holds a digit is an
// id.
var token = regexp.MustCompile(`[A-Za-z0-9_-]{8,}`)

func stripIDs(s string) string {
	return token.ReplaceAllStringFunc(s, func(t string) string {
		if strings.ContainsAny(t, "0123456789") {
			return "<id>"
		}
		return t
	})
}

// Signature is what two failures of one document must share, beside their
// error code, to count as the same failure: the message with everything
// that varies between attempts (URLs, UUIDs, network and memory addresses,
// e-mail addresses, ids of letters and digits, numbers) replaced by a
// placeholder and whitespace collapsed. It is valid UTF-8 without NUL
// bytes, at most 300 characters.
func Signature(message string) string {
	s := admission.Text(message)
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	s = number.ReplaceAllString(stripIDs(s), "<n>")
	return admission.Storable(strings.TrimSpace(whitespace.ReplaceAllString(s, " ")), maxSignatureChars)
}

// dependencyCodes are the error codes of a dependency's fault. Repeating one
// never makes an entry permanent: a dependency's fault (an Elasticsearch
// time-out or outage, a database error) says nothing about the document;
// the others (a panic, a quality error, an unknown error) are the
// document's, and the same one three times in a row will not change.
func dependencyCodes() []domain.ErrorCode {
	return []domain.ErrorCode{domain.ErrorCodeESTimeout, domain.ErrorCodeESUnavailable, domain.ErrorCodeDB}
}
