package admission

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
)

func doc(mod func(*domain.RawContent)) *domain.RawContent {
	d := &domain.RawContent{
		RawDocument: contentindex.RawDocument{
			ID: "doc-1", URL: "https://news.test/2026/11/25/story", SourceName: "news_test",
			Title: "Council approves budget", RawText: "The council approved the budget on Tuesday.",
			RawHTML: "<p>The council approved the budget on Tuesday.</p>", OGType: "article",
			MetaDescription: "Budget approved", PublishedDate: "2026-11-25T10:00:00Z", CrawledAt: time.Now(),
		},
		Index: "news_test_raw_content",
	}
	if mod != nil {
		mod(d)
	}
	return d
}

// MB is a decimal megabyte, as "a 10 MB document" is usually meant.
const MB = 1_000_000

func TestAdmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mod    func(*domain.RawContent)
		limits Limits
		// wantField is the field a refusal names; "" means admitted.
		wantField string
		// wantMsg must appear in the refusal's message.
		wantMsg string
		// check inspects an admitted document.
		check func(t *testing.T, d *domain.RawContent)
	}{
		{name: "healthy document", check: func(t *testing.T, d *domain.RawContent) {
			if !reflect.DeepEqual(*d, *doc(func(e *domain.RawContent) { e.CrawledAt = d.CrawledAt })) {
				t.Errorf("a clean document was changed: %+v", d)
			}
		}},

		// id
		{name: "missing id", mod: func(d *domain.RawContent) { d.ID = "" }, wantField: "id", wantMsg: "id: missing"},
		{name: "blank id", mod: func(d *domain.RawContent) { d.ID = " \t" }, wantField: "id", wantMsg: "id: missing"},
		{name: "NUL in id", mod: func(d *domain.RawContent) { d.ID = "doc\x001" }, wantField: "id", wantMsg: "id: NUL byte at byte 3"},
		{name: "invalid UTF-8 in id", mod: func(d *domain.RawContent) { d.ID = "doc\xff1" }, wantField: "id", wantMsg: "id: invalid UTF-8 at byte 3"},
		{name: "256-character id", mod: func(d *domain.RawContent) { d.ID = strings.Repeat("a", 256) },
			wantField: "id", wantMsg: "id: 256 characters, over the 255-character limit"},
		{name: "255-character id", mod: func(d *domain.RawContent) { d.ID = strings.Repeat("a", 255) }},
		{name: "255 multibyte characters of id", mod: func(d *domain.RawContent) { d.ID = strings.Repeat("ж", 255) }},
		{name: "id over a lowered limit", mod: func(d *domain.RawContent) { d.ID = "abcdef" }, limits: Limits{MaxIDChars: 5},
			wantField: "id", wantMsg: "id: 6 characters, over the 5-character limit"},

		// source_name
		{name: "NUL in source", mod: func(d *domain.RawContent) { d.SourceName = "\x00news" }, wantField: "source_name", wantMsg: "NUL byte at byte 0"},
		{name: "invalid UTF-8 in source", mod: func(d *domain.RawContent) { d.SourceName = "news\xc3" }, wantField: "source_name", wantMsg: "invalid UTF-8 at byte 4"},
		{name: "300-character source", mod: func(d *domain.RawContent) { d.SourceName = strings.Repeat("s", 300) },
			wantField: "source_name", wantMsg: "source_name: 300 characters, over the 255-character limit"},
		{name: "255 multibyte characters of source", mod: func(d *domain.RawContent) { d.SourceName, d.Index = strings.Repeat("é", 255), "" },
			check: func(t *testing.T, d *domain.RawContent) {
				if len(d.SourceName) != 510 || utf8.RuneCountInString(d.SourceName) != 255 {
					t.Errorf("source changed: %d bytes", len(d.SourceName))
				}
			}},
		{name: "256 multibyte characters of source", mod: func(d *domain.RawContent) { d.SourceName = strings.Repeat("é", 256) },
			wantField: "source_name", wantMsg: "256 characters, over the 255-character limit"},
		{name: "empty source is tolerated outside a raw index", mod: func(d *domain.RawContent) { d.SourceName, d.Index = "", "" }},
		// The source is the raw index's: labels and retry budgets are keyed
		// by it, so a document may not name another (before: admitted).
		{name: "source of another index", mod: func(d *domain.RawContent) { d.SourceName = "wire" }, wantField: "source_name",
			wantMsg: `source_name: "wire" is not the source of its raw index "news_test_raw_content" ("news_test")`},
		{name: "source missing in a raw index", mod: func(d *domain.RawContent) { d.SourceName = "" }, wantField: "source_name",
			wantMsg: `source_name: missing; the document is in raw index "news_test_raw_content", of source "news_test"`},
		{name: "source differing in case", mod: func(d *domain.RawContent) { d.SourceName = "News_test" }, wantField: "source_name",
			wantMsg: `"News_test" is not the source`},
		{name: "source of a raw index is its own", mod: func(d *domain.RawContent) { d.Index = "wire_raw_content"; d.SourceName = "wire" }},

		// priority: one of the five levels, or empty (the source's level)
		{name: "critical priority", mod: func(d *domain.RawContent) { d.Priority = "critical" }},
		{name: "cleanup priority", mod: func(d *domain.RawContent) { d.Priority = "cleanup" }},
		{name: "unknown priority", mod: func(d *domain.RawContent) { d.Priority = "urgent" }, wantField: "priority",
			wantMsg: `priority: "urgent" is none of critical, high, normal, low, cleanup`},
		{name: "priority in capitals", mod: func(d *domain.RawContent) { d.Priority = "High" }, wantField: "priority"},

		// url
		{name: "missing url", mod: func(d *domain.RawContent) { d.URL = "" }, wantField: "url", wantMsg: "url: missing"},
		{name: "NUL in url", mod: func(d *domain.RawContent) { d.URL = "https://news.test/a\x00b" }, wantField: "url", wantMsg: "NUL byte at byte 19"},
		{name: "invalid UTF-8 in url", mod: func(d *domain.RawContent) { d.URL = "https://news.test/caf\xe9" }, wantField: "url", wantMsg: "invalid UTF-8"},
		{name: "ftp url", mod: func(d *domain.RawContent) { d.URL = "ftp://news.test/a" }, wantField: "url", wantMsg: "not an absolute http(s) URL"},
		{name: "relative url", mod: func(d *domain.RawContent) { d.URL = "/news/1" }, wantField: "url", wantMsg: "not an absolute http(s) URL"},
		{name: "javascript url", mod: func(d *domain.RawContent) { d.URL = "javascript:alert(1)" }, wantField: "url"},
		{name: "control character in url", mod: func(d *domain.RawContent) { d.URL = "https://news.test/a\nb" }, wantField: "url"},
		{name: "url of 8193 bytes", mod: func(d *domain.RawContent) { d.URL = "https://news.test/" + strings.Repeat("a", 8193-18) },
			wantField: "url", wantMsg: "url: 8193 bytes, over the 8192-byte (8 KiB) limit"},
		{name: "url of 8192 bytes", mod: func(d *domain.RawContent) { d.URL = "https://news.test/" + strings.Repeat("a", 8192-18) }},

		// free text: normalized, never refused for its encoding
		{name: "NUL in raw_text is removed", mod: func(d *domain.RawContent) { d.RawText = "Police\x00 said\x00\x00 so." },
			check: func(t *testing.T, d *domain.RawContent) {
				if d.RawText != "Police said so." {
					t.Errorf("raw_text = %q", d.RawText)
				}
			}},
		{name: "invalid UTF-8 in title is replaced", mod: func(d *domain.RawContent) { d.Title = "Caf\xe9 \xff\xfe closes" },
			check: func(t *testing.T, d *domain.RawContent) {
				if d.Title != "Caf\uFFFD \uFFFD closes" {
					t.Errorf("title = %q", d.Title)
				}
			}},
		{name: "NUL and invalid UTF-8 everywhere else", mod: func(d *domain.RawContent) {
			d.RawHTML, d.OGType, d.MetaDescription, d.PublishedDate = "<p>\x00a\xc3</p>", "art\x00icle", "de\xffsc", "2026\x00-11-25"
			d.ClaimedBy, d.ClassificationStatus, d.ClassificationError = "w\x001", "processing\x00", "\xff"
		}, check: func(t *testing.T, d *domain.RawContent) {
			want := []string{"<p>a\uFFFD</p>", "article", "de\uFFFDsc", "2026-11-25", "w1", "processing", "\uFFFD"}
			got := []string{d.RawHTML, d.OGType, d.MetaDescription, d.PublishedDate, d.ClaimedBy, d.ClassificationStatus, d.ClassificationError}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("field %d = %q, want %q", i, got[i], want[i])
				}
			}
		}},
		{name: "title over its limit is cut", mod: func(d *domain.RawContent) { d.Title = strings.Repeat("é", 3000) },
			check: func(t *testing.T, d *domain.RawContent) {
				if len(d.Title) > MaxTitleBytesDefault || !strings.HasSuffix(d.Title, "…") || !utf8.ValidString(d.Title) ||
					len(d.Title) < MaxTitleBytesDefault-4 {
					t.Errorf("title of %d bytes, valid %t, suffix %q", len(d.Title), utf8.ValidString(d.Title), d.Title[len(d.Title)-3:])
				}
			}},
		{name: "title at its limit is kept", mod: func(d *domain.RawContent) { d.Title = strings.Repeat("t", MaxTitleBytesDefault) },
			check: func(t *testing.T, d *domain.RawContent) {
				if d.Title != strings.Repeat("t", MaxTitleBytesDefault) {
					t.Errorf("title changed to %d bytes", len(d.Title))
				}
			}},
		{name: "og_type over its limit is dropped", mod: func(d *domain.RawContent) { d.OGType = strings.Repeat("o", 40_000) },
			check: func(t *testing.T, d *domain.RawContent) {
				if d.OGType != "" {
					t.Errorf("og_type kept, %d bytes", len(d.OGType))
				}
			}},
		{name: "empty text and title", mod: func(d *domain.RawContent) { d.Title, d.RawText = " ", "\n" },
			wantField: "raw_text", wantMsg: "raw_text: empty, and so is title"},
		{name: "text of NUL bytes only", mod: func(d *domain.RawContent) { d.Title, d.RawText = "\x00", "\x00\x00 \x00" },
			wantField: "raw_text"},
		{name: "title alone is enough", mod: func(d *domain.RawContent) { d.RawText = "" }},

		// document size
		{name: "10 MB raw_text", mod: func(d *domain.RawContent) { d.RawText = strings.Repeat("word ", 10*MB/5) },
			wantField: "document", wantMsg: "over the 8388608-byte (8 MiB) limit"},
		{name: "5.6 MB article", mod: func(d *domain.RawContent) {
			d.RawText = strings.Repeat("word ", 3*MB/5)
			d.RawHTML = "<article>" + strings.Repeat("text ", 26*MB/10/5) + "</article>"
		}, check: func(t *testing.T, d *domain.RawContent) {
			if DocumentBytes(&d.RawDocument) < 5_600_000 {
				t.Errorf("document is %d bytes, want 5.6 MB", DocumentBytes(&d.RawDocument))
			}
		}},
		{name: "every text field counts", mod: func(d *domain.RawContent) {
			d.Title, d.RawText, d.RawHTML, d.MetaDescription = "ttttt", "rrrrr", "hhhhh", "mmmmm"
		}, limits: Limits{MaxDocumentBytes: 19}, wantField: "document",
			wantMsg: "document: 20 bytes of text (title 5, raw_text 5, raw_html 5, meta_description 5), over the 19-byte limit"},
		{name: "document exactly at its limit", mod: func(d *domain.RawContent) {
			d.Title, d.RawText, d.RawHTML, d.MetaDescription = "ttttt", "rrrrr", "hhhhh", "mmmmm"
		}, limits: Limits{MaxDocumentBytes: 20}},
		{name: "size is counted after normalization", mod: func(d *domain.RawContent) {
			d.Title, d.RawText, d.RawHTML, d.MetaDescription = "t", strings.Repeat("\x00", 100)+"r", "", ""
		}, limits: Limits{MaxDocumentBytes: 2}},

		// the rest
		{name: "malformed stored document", mod: func(d *domain.RawContent) { d.DecodeError = "json: cannot unmarshal \x00\xff" },
			wantField: "document", wantMsg: "malformed stored document: json: cannot unmarshal \uFFFD"},
		{name: "index whose classified name is too long", mod: func(d *domain.RawContent) {
			d.Index = strings.Repeat("i", 253) + "_raw_content"
		}, wantField: "index", wantMsg: "over the 255-character limit"},
		{name: "no index (dry run)", mod: func(d *domain.RawContent) { d.Index = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := doc(tt.mod)
			err := Admit(d, tt.limits)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				assertAdmitted(t, d, tt.limits.WithDefaults())
				if tt.check != nil {
					tt.check(t, d)
				}
				return
			}
			var rej *RejectionError
			if !errors.As(err, &rej) || !errors.Is(err, ErrRejected) {
				t.Fatalf("err = %v, want a RejectionError for %s", err, tt.wantField)
			}
			if rej.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q (field %q), want field %q and %q", err, rej.Field, tt.wantField, tt.wantMsg)
			}
			assertSafeMessage(t, err)
		})
	}
}

// assertAdmitted checks what an admitted document promises.
func assertAdmitted(t *testing.T, d *domain.RawContent, l Limits) {
	t.Helper()
	for name, s := range stringFields(d) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			t.Errorf("%s is not storable: %q", name, s)
		}
	}
	for _, c := range []struct {
		name     string
		got, max int
	}{
		{"id characters", utf8.RuneCountInString(d.ID), l.MaxIDChars},
		{"source_name characters", utf8.RuneCountInString(d.SourceName), l.MaxSourceChars},
		{"url bytes", len(d.URL), l.MaxURLBytes},
		{"title bytes", len(d.Title), l.MaxTitleBytes},
		{"og_type bytes", len(d.OGType), l.MaxOGTypeBytes},
		{"document bytes", DocumentBytes(&d.RawDocument), l.MaxDocumentBytes},
	} {
		if c.got > c.max {
			t.Errorf("%s: %d, over %d", c.name, c.got, c.max)
		}
	}
	if strings.TrimSpace(d.ID) == "" || (strings.TrimSpace(d.Title) == "" && strings.TrimSpace(d.RawText) == "") {
		t.Errorf("admitted without id or text: %+v", d.RawDocument)
	}
}

// assertSafeMessage checks that a refusal can be stored as a reason
// (dead_letter_queue.error_message, classification_error).
func assertSafeMessage(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if !utf8.ValidString(msg) || strings.ContainsRune(msg, 0) || len(msg) > 1024 {
		t.Errorf("refusal message is not storable (%d bytes): %q", len(msg), msg)
	}
}

func stringFields(d *domain.RawContent) map[string]string {
	return map[string]string{
		"id": d.ID, "url": d.URL, "source_name": d.SourceName, "title": d.Title, "raw_text": d.RawText,
		"raw_html": d.RawHTML, "og_type": d.OGType, "meta_description": d.MetaDescription,
		"published_date": d.PublishedDate, "classification_status": d.ClassificationStatus,
		"claimed_by": d.ClaimedBy, "classification_error": d.ClassificationError, "index": d.Index,
	}
}

func TestAdmitIsIdempotent(t *testing.T) {
	t.Parallel()
	d := doc(func(d *domain.RawContent) {
		d.Title = strings.Repeat("\xffé\x00", 2000)
		d.RawText = "a\x00b\xc3"
		d.OGType = strings.Repeat("x", 300)
	})
	if err := Admit(d, Limits{}); err != nil {
		t.Fatal(err)
	}
	once := *d
	if err := Admit(d, Limits{}); err != nil || !reflect.DeepEqual(*d, once) {
		t.Errorf("second Admit changed the document or refused it: %v", err)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"a\x00b", "ab"},
		{"\x00\x00", ""},
		{"a\xffb", "a\uFFFDb"},
		{"a\xff\xfe\xfdb", "a\uFFFDb"},
		{"\xff\x00\xff", "\uFFFD\uFFFD"},
		{"caf\xc3", "caf\uFFFD"},
		{"\xed\xa0\x80", "\uFFFD"}, // an encoded surrogate is invalid UTF-8
		{"日本\x00語", "日本語"},
	} {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Text(tt.want); got != tt.want {
			t.Errorf("Text is not idempotent on %q", tt.want)
		}
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"ééééé", 8, "éé…"}, // 10 bytes: cut at 5 falls inside an é
		{"abcdef", 3, "abc"},
		{"éé", 3, "é"},
		{"abc", 0, ""},
	} {
		got := Clip(tt.in, tt.max)
		if got != tt.want || len(got) > tt.max {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestStorable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"doc-1", 255, "doc-1"},
		{"doc\x00\xff", 255, "doc\uFFFD"},
		{strings.Repeat("ж", 300), 255, strings.Repeat("ж", 254) + "…"},
		{"abc", 1, "…"},
		{"abc", 0, ""},
	} {
		got := Storable(tt.in, tt.max)
		if got != tt.want || utf8.RuneCountInString(got) > max(tt.max, 0) {
			t.Errorf("Storable(%.20q, %d) = %.20q, want %.20q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	if got := DefaultLimits(); got != (Limits{255, 255, 8192, 4096, 255, 8 << 20}) {
		t.Errorf("defaults = %+v", got)
	}
	if err := (Limits{}).Validate(); err != nil {
		t.Errorf("zero limits: %v", err)
	}
	if got := (Limits{MaxURLBytes: 100}).WithDefaults(); got.MaxURLBytes != 100 || got.MaxIDChars != 255 {
		t.Errorf("WithDefaults overrode a set field: %+v", got)
	}
	err := Limits{MaxIDChars: 256, MaxSourceChars: -1, MaxDocumentBytes: -5}.Validate()
	for _, want := range []string{"MaxIDChars: at most 255", "MaxSourceChars: must be positive (got -1)", "MaxDocumentBytes: must be positive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want %q", err, want)
		}
	}
}

// A document refused for naming another source is recorded under its
// index's source (its dead letter, its counts and labels), whatever it
// claimed: a writer cannot pick the source it is charged to.
func TestRefusedSourceIsTheIndexs(t *testing.T) {
	t.Parallel()
	d := doc(func(d *domain.RawContent) { d.SourceName = "someone-else-entirely" })
	if err := Admit(d, Limits{}); !errors.Is(err, ErrRejected) {
		t.Fatalf("Admit = %v, want a refusal", err)
	}
	if d.SourceName != "news_test" {
		t.Errorf("refused document's source = %q, want its index's, news_test", d.SourceName)
	}
}

// A document of a raw index refused for any reason (here before its
// source_name is even looked at) is counted and dead-lettered under its
// index's source, never under the source_name its writer chose: a writer
// must not be able to make metric series or retry budgets at will.
func TestRefusedDocumentsBelongToTheirIndexSource(t *testing.T) {
	for name, mod := range map[string]func(*domain.RawContent){
		"a file URL":        func(d *domain.RawContent) { d.URL = "file:///etc/passwd" },
		"a missing id":      func(d *domain.RawContent) { d.ID = "" },
		"a malformed store": func(d *domain.RawContent) { d.DecodeError = "unexpected end of JSON input" },
		"no text at all":    func(d *domain.RawContent) { d.Title, d.RawText, d.RawHTML, d.MetaDescription = "", "", "", "" },
	} {
		d := doc(func(d *domain.RawContent) { d.SourceName = "writer-chosen-9f3a"; mod(d) })
		if err := Admit(d, Limits{}); err == nil {
			t.Fatalf("%s: admitted", name)
		}
		if d.SourceName != "news_test" {
			t.Errorf("%s: refused under source %q, want its index's news_test", name, d.SourceName)
		}
	}
	// Outside a raw index (the classify API) the document keeps its name.
	d := doc(func(d *domain.RawContent) { d.Index, d.SourceName, d.URL = "", "api_source", "file:///etc/passwd" })
	if err := Admit(d, Limits{}); err == nil || d.SourceName != "api_source" {
		t.Errorf("classify API document: err %v, source %q, want refused as api_source", err, d.SourceName)
	}
	if OwnSource(d) {
		t.Error("OwnSource changed a document of no raw index")
	}
}
