package admission

import (
	"errors"
	"testing"

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
		if err := Admit(d, limits); err != nil || *d != once {
			t.Fatalf("admitting again: %v, changed %t", err, *d != once)
		}
	})
}
