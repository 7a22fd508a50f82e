package rawindex

import (
	"encoding/json"
	"reflect"
	"testing"
)

// checkWithFields holds withFields to the decoded version: the same
// document, for any object with distinct keys.
func checkWithFields(t *testing.T, src string) {
	t.Helper()
	if !json.Valid([]byte(src)) {
		return
	}
	seen := map[string]bool{}
	dup := false
	if topLevel([]byte(src), func(k, _ []byte) { dup = dup || seen[string(k)]; seen[string(k)] = true }) && dup {
		return // Elasticsearch refuses duplicate keys: no _source has them
	}
	fields := map[string]any{"classification_status": "processing", "claimed_by": "r1", "claimed_at": nil}
	got, err := withFields(json.RawMessage(src), fields)
	set := map[string][]byte{}
	for k, v := range fields {
		set[k], _ = json.Marshal(v)
	}
	want, werr := withFieldsDecoded(json.RawMessage(src), set)
	if (err != nil) != (werr != nil) {
		t.Fatalf("withFields(%q): error %v, decoded: %v", src, err, werr)
	}
	if err != nil {
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("withFields(%q) = %s: not JSON: %v", src, got, err)
	}
	_ = json.Unmarshal(want, &w)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("withFields(%q)\n got %s\nwant %s", src, got, want)
	}
}

func TestWithFieldsKeepsEveryOtherMember(t *testing.T) {
	for _, src := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"claimed_by":"old","a":[1,{"b":"}"}],"c":"x\"y"}`,
		"{\n  \"title\" : \"A \\\\ b\",\n  \"n\" : -1.5e3 , \"t\":true,\"f\":false,\"z\":null}",
		`{"k\u0065y":1}`, `{"classification_status":"pending","raw_text":"\u00e9 <b>"}`, `[1]`, `null`, `"s"`,
	} {
		checkWithFields(t, src)
	}
}

func FuzzWithFields(f *testing.F) {
	f.Add(`{"claimed_by":"old","a":[1,{"b":"}"}],"c":"x\"y"}`)
	f.Add(`{"title":"t","word_count":3,"crawled_at":"2026-11-26T08:00:00Z"}`)
	f.Fuzz(checkWithFields)
}

func BenchmarkWithFields(b *testing.B) {
	doc := map[string]any{"id": "doc-1", "url": "https://example.org/a", "source_name": "w", "title": "Budget vote",
		"raw_text": string(make([]byte, 3000)), "meta_description": "Council", "og_type": "article", "word_count": 500,
		"crawled_at": "2026-11-26T08:00:00Z", "published_date": "2026-11-25T12:00:00Z", "classification_status": "pending"}
	src, _ := json.Marshal(doc)
	fields := map[string]any{"classification_status": "processing", "claimed_by": "r1", "claimed_at": "2026-11-26T09:00:00Z"}
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			_, _ = withFields(src, fields)
		}
	})
	set := map[string][]byte{}
	for k, v := range fields {
		set[k], _ = json.Marshal(v)
	}
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			_, _ = withFieldsDecoded(src, set)
		}
	})
}
