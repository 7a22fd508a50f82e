// Package admission is the classifier's door: every field of a raw document
// that reaches Postgres or an Elasticsearch bulk request is validated or
// normalized here, before the document is classified. It is pure logic.
//
// The rule:
//
//   - Identity fields (id, source_name, url) are never changed: they name the
//     document in Elasticsearch, in the dead-letter queue and in published
//     messages. One holding a NUL byte or invalid UTF-8, or over its limit, is
//     refused.
//   - A document read from a raw index, {source}_raw_content, belongs to
//     that source: one whose source_name is another (or missing) is refused,
//     since metric labels, retry budgets and source statistics are keyed by
//     the source, and a writer must not be able to pick its own. Every
//     refused document of a raw index, whatever refused it, gets its
//     index's source as SourceName (OwnSource), so that its dead letter and
//     counts go to the source it came from; a source_name refusal quotes
//     the value it carried.
//   - Free-text fields (title, raw_text, raw_html, og_type, meta_description,
//     published_date, and the claim fields) are normalized in place: NUL bytes
//     (which Elasticsearch accepts and Postgres refuses) are removed and each
//     run of invalid UTF-8 becomes U+FFFD, so a crawler's encoding glitch
//     never loses an article. A title over its limit is cut (ending with
//     "…"); an og_type over its limit is dropped.
//   - The URL's class (AssessURL, seed 004) decides its strategy: a file://
//     URL or one ending in an archive, document or executable extension is
//     refused with the class and reason; a social media or video platform
//     page is admitted and classified from its metadata only (package
//     pipeline).
//   - A document whose text (title, raw_text, raw_html, meta_description)
//     is over MaxDocumentBytes after normalization is refused, as is one with
//     neither text nor title.
//
// A refusal is a *RejectionError (errors.Is(err, ErrRejected)) whose message
// names the field and, where one applies, the limit; it never contains a NUL
// byte or invalid UTF-8, so it can be stored as the failure reason.
package admission

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
)

// ErrRejected is wrapped by every refusal: the document can never be
// processed as it is.
var ErrRejected = errors.New("refused at the door")

// RejectionError says which field made a document unacceptable, and why.
type RejectionError struct {
	// Field is the raw document's JSON field name ("id", "url", ...), or
	// "document" for the document as a whole.
	Field string
	// Reason is the rest of the message, e.g. "300 characters, over the
	// 255-character limit".
	Reason string
}

func (e *RejectionError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrRejected) true.
func (e *RejectionError) Unwrap() error { return ErrRejected }

func reject(field, format string, args ...any) error {
	return &RejectionError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// maxQuotedBytes bounds how much of an offending value a message quotes.
const maxQuotedBytes = 120

// Admit checks raw against l (zero fields take their defaults), normalizing
// its free-text fields in place. It returns nil when the document may be
// classified and stored, or a *RejectionError. It is idempotent: a document
// it admitted is admitted again unchanged.
func Admit(raw *domain.RawContent, l Limits) (err error) {
	// Whatever refuses it, a refused document of a raw index is counted and
	// dead-lettered under its index's source, never under the source_name
	// its writer chose (a label a writer could multiply at will).
	defer func() {
		if err != nil {
			OwnSource(raw)
		}
	}()
	l = l.WithDefaults()
	if raw.DecodeError != "" {
		return reject("document", "malformed stored document: %s", Clip(Text(raw.DecodeError), 300))
	}

	// Identity: refused, never altered.
	if strings.TrimSpace(raw.ID) == "" {
		return reject("id", "missing")
	}
	if err := identity("id", raw.ID, l.MaxIDChars); err != nil {
		return err
	}
	if err := identity("source_name", raw.SourceName, l.MaxSourceChars); err != nil {
		return err
	}
	if err := checkURL(raw.URL, l.MaxURLBytes); err != nil {
		return err
	}
	if raw.Index != "" {
		if n := utf8.RuneCountInString(contentindex.ClassifiedIndexFor(raw.Index)); n > ColumnChars {
			return reject("index", "classified index name of %q is %d characters, over the %d-character limit",
				Clip(raw.Index, maxQuotedBytes), n, ColumnChars)
		}
	}
	if err := sourceOfIndex(raw); err != nil {
		return err
	}
	if _, ok := contentindex.PriorityValue(raw.Priority); !ok {
		return reject("priority", "%q is none of %s", Clip(raw.Priority, maxQuotedBytes), strings.Join(contentindex.Priorities(), ", "))
	}

	// Free text: normalized in place.
	d := &raw.RawDocument
	for _, s := range []*string{&d.Title, &d.RawText, &d.RawHTML, &d.OGType, &d.MetaDescription,
		&d.PublishedDate, &d.ClassificationStatus, &d.ClaimedBy, &d.ClassificationError} {
		*s = Text(*s)
	}
	if len(d.Title) > l.MaxTitleBytes {
		d.Title = Clip(d.Title, l.MaxTitleBytes)
	}
	if len(d.OGType) > l.MaxOGTypeBytes {
		d.OGType = ""
	}

	if strings.TrimSpace(d.RawText) == "" && strings.TrimSpace(d.Title) == "" {
		return reject("raw_text", "empty, and so is title")
	}
	if total := DocumentBytes(d); total > l.MaxDocumentBytes {
		return reject("document", "%d bytes of text (title %d, raw_text %d, raw_html %d, meta_description %d), over the %s limit",
			total, len(d.Title), len(d.RawText), len(d.RawHTML), len(d.MetaDescription), byteLimit(l.MaxDocumentBytes))
	}
	return nil
}

// OwnSource sets the SourceName of a document read from a raw index,
// {source}_raw_content, to that source, and reports whether it changed it:
// the name its metrics, dead letter and statistics are keyed by, whatever
// the document claims. A document of no raw index (the classify API) keeps
// its own. Admit calls it on every refusal; the worker calls it for a
// document it dead-letters without admitting it (a stalled one).
func OwnSource(raw *domain.RawContent) bool {
	if contentindex.TypeOf(raw.Index) != contentindex.TypeRaw {
		return false
	}
	source := strings.TrimSuffix(raw.Index, contentindex.RawSuffix)
	if raw.SourceName == source {
		return false
	}
	raw.SourceName = source
	return true
}

// sourceOfIndex refuses a document of a raw index whose source_name is not
// the index's source, and then gives it its index's source (package
// comment).
func sourceOfIndex(raw *domain.RawContent) error {
	if contentindex.TypeOf(raw.Index) != contentindex.TypeRaw {
		return nil // not read from a raw index (the classify API)
	}
	source := strings.TrimSuffix(raw.Index, contentindex.RawSuffix)
	if raw.SourceName == source {
		return nil
	}
	claimed := raw.SourceName
	raw.SourceName = source
	if claimed == "" {
		return reject("source_name", "missing; the document is in raw index %q, of source %q", Clip(raw.Index, maxQuotedBytes), Clip(source, maxQuotedBytes))
	}
	return reject("source_name", "%q is not the source of its raw index %q (%q)",
		Clip(claimed, maxQuotedBytes), Clip(raw.Index, maxQuotedBytes), Clip(source, maxQuotedBytes))
}

// DocumentBytes is the size MaxDocumentBytes bounds: the bytes of title,
// raw_text, raw_html and meta_description together.
func DocumentBytes(d *contentindex.RawDocument) int {
	return len(d.Title) + len(d.RawText) + len(d.RawHTML) + len(d.MetaDescription)
}

// identity refuses a value that Postgres cannot store as it is, or that is
// longer than maxChars characters.
func identity(field, s string, maxChars int) error {
	if err := storable(field, s); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(s); n > maxChars {
		return reject(field, "%d characters, over the %d-character limit", n, maxChars)
	}
	return nil
}

// storable refuses invalid UTF-8 and NUL bytes, naming the byte offset.
func storable(field, s string) error {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return reject(field, "invalid UTF-8 at byte %d", i)
		case r == 0:
			return reject(field, "NUL byte at byte %d", i)
		}
		i += size
	}
	return nil
}

func checkURL(s string, maxBytes int) error {
	if strings.TrimSpace(s) == "" {
		return reject("url", "missing")
	}
	if err := storable("url", s); err != nil {
		return err
	}
	if len(s) > maxBytes {
		return reject("url", "%d bytes, over the %s limit", len(s), byteLimit(maxBytes))
	}
	u, err := url.Parse(s)
	a := AssessURL(s)
	if err == nil && a.Class == ClassFileURL {
		return refuseByClass(a, s)
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return reject("url", "%q is not an absolute http(s) URL", Clip(s, maxQuotedBytes))
	}
	if a.Strategy == StrategyRefuse {
		return refuseByClass(a, s)
	}
	return nil
}

// Text returns s with NUL bytes removed and each run of invalid UTF-8
// replaced by U+FFFD. Text(Text(s)) == Text(s).
func Text(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	return strings.ReplaceAll(s, "\x00", "")
}

// Clip returns s cut to at most maxBytes bytes at a character boundary,
// ending with "…" when it was cut (unless maxBytes is too small to hold
// it). s must be valid UTF-8 for the result to be.
func Clip(s string, maxBytes int) string {
	if len(s) <= maxBytes {
		return s
	}
	const ellipsis = "…"
	suffix := ""
	if maxBytes > len(ellipsis) {
		suffix = ellipsis
	}
	cut := max(maxBytes-len(suffix), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
}

// Storable returns s as it can be stored in a VARCHAR(maxChars) column:
// Text(s), cut to maxChars characters with a final "…" when it was longer.
// It is for recording a refused document's identity (a dead-letter row), not
// for admitting one: the result is no longer the document's id.
func Storable(s string, maxChars int) string {
	s = Text(s)
	if maxChars <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= maxChars {
		return s
	}
	n := 0
	for i := range s {
		if n == maxChars-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// byteLimit renders a byte limit for a message: "8192-byte", or
// "8388608-byte (8 MiB)" for a whole number of KiB or MiB.
func byteLimit(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d-byte (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d-byte (%d KiB)", n, n>>10)
	default:
		return fmt.Sprintf("%d-byte", n)
	}
}
