package admission

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
)

// tight limits let the fuzzer reach every limit with short inputs.
var tight = Limits{MaxIDChars: 8, MaxSourceChars: 8, MaxURLBytes: 48, MaxTitleBytes: 16, MaxOGTypeBytes: 8, MaxDocumentBytes: 128}

// FuzzAdmit checks, for any document: Admit never panics; an admitted
// document has only valid UTF-8 without NUL bytes in every string field and
// fits the limits; a refusal is a RejectionError with a storable message;
// admitting an admitted document again changes nothing.
func FuzzAdmit(f *testing.F) {
	f.Add("doc-1", "https://news.test/a", "news", "Title", "Body text", "<p>Body</p>", "article", "desc", "2026-11-25", false)
	f.Add("doc\x001", "https://news.test/a", "news", "Title", "Body", "", "", "", "", false)
	f.Add("doc-2", "https://news.test/a\x00", "ne\xffws", "T\xc3", "a\x00b", "\xff", "og\x00", "\x00", "\xff", true)
	f.Add("ж", "http://x.test", "éééééééé", "ééééééééééé", "", "", "video.other", "", "", true)
	f.Add(" ", "ftp://x.test/a", "", "", "\x00", "", "", "", "", false)
	f.Add("doc-3", "/relative", "s", "", "text", "", "", "", "", true)
	f.Fuzz(func(t *testing.T, id, rawURL, source, title, text, html, ogType, meta, date string, small bool) {
		limits := Limits{}
		if small {
			limits = tight
		}
		d := &domain.RawContent{
			RawDocument: contentindex.RawDocument{ID: id, URL: rawURL, SourceName: source, Title: title, RawText: text,
				RawHTML: html, OGType: ogType, MetaDescription: meta, PublishedDate: date, ClaimedBy: meta,
				ClassificationStatus: ogType, ClassificationError: date},
			Index: "fuzz_raw_content",
		}
		err := Admit(d, limits)
		if err != nil {
			var rej *RejectionError
			if !errors.As(err, &rej) || !errors.Is(err, ErrRejected) || rej.Field == "" {
				t.Fatalf("refusal is not a RejectionError: %v", err)
			}
			assertSafeMessage(t, err)
			return
		}
		assertAdmitted(t, d, limits.WithDefaults())
		if d.ID != id || d.URL != rawURL || d.SourceName != source {
			t.Fatalf("an identity field was changed: %q %q %q", d.ID, d.URL, d.SourceName)
		}
		once := *d
		if err := Admit(d, limits); err != nil || !reflect.DeepEqual(*d, once) {
			t.Fatalf("admitting again: %v, changed %t", err, !reflect.DeepEqual(*d, once))
		}
	})
}

// FuzzDecodeRaw feeds any bytes as a stored _source through the raw-document
// decoder (domain.DecodeRaw, what the poller and the dead-letter re-read use)
// and then the door: nothing panics; the identity is always the _id given,
// whatever _source says; a _source that does not decode gives an empty
// document with its reason, which the door refuses; an admitted document
// carries only valid UTF-8 without NUL.
func FuzzDecodeRaw(f *testing.F) {
	f.Add("doc-1", []byte(`{"id":"doc-1","url":"https://news.test/a","source_name":"news","title":"T","raw_text":"Body"}`))
	f.Add("doc-2", []byte(`{"id":"other","url":"https://news.test/a","title":"T\u0000","raw_text":"a\u0000b"}`))
	f.Add("doc-3", []byte(`{"url":42,"title":["x"]}`))
	f.Add("doc-4", []byte(`{"published_date":"0000-01-01T00:00:00+01:00","url":"https://x.test","raw_text":"t"}`))
	f.Add("doc-5", []byte(`not json`))
	f.Add("doc-6", []byte(`{"url":"https://x.test","raw_text":"\udc00 lone surrogate"}`))
	f.Fuzz(func(t *testing.T, id string, source []byte) {
		raw, _ := domain.DecodeRaw("fuzz_raw_content", id, 1, 1, source)
		if raw.ID != id || raw.Index != "fuzz_raw_content" {
			t.Fatalf("identity = %s/%q, want fuzz_raw_content/%q", raw.Index, raw.ID, id)
		}
		if raw.DecodeError != "" && raw.RawDocument.URL != "" {
			t.Fatalf("a document that did not decode kept fields: %+v", raw.RawDocument)
		}
		err := Admit(raw, Limits{})
		if raw.DecodeError != "" && err == nil {
			t.Fatalf("a document that did not decode was admitted (%s)", raw.DecodeError)
		}
		if err != nil {
			return
		}
		for _, s := range []string{raw.ID, raw.URL, raw.SourceName, raw.Title, raw.RawText, raw.RawHTML, raw.MetaDescription} {
			if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("admitted field %q is not clean text", s)
			}
		}
	})
}
