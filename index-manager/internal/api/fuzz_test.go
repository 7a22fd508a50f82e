package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// Native fuzz targets for the safety checks; under plain `go test` they run
// their seeds. Run one for longer with, for example,
// go test -run '^$' -fuzz '^FuzzValidateQuery$' -fuzztime 30s ./internal/api/

func decodeJSONObject(data []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// fieldLevel are the query types whose object is keyed by field names.
var fieldLevel = map[string]bool{"match": true, "match_phrase": true, "match_phrase_prefix": true, "term": true, "terms": true, "prefix": true, "range": true}

// hasKey reports whether key appears as an object key anywhere in v, other
// than as a field name (a document field may be called "script").
func hasKey(v any, key, parent string) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if k == key && !fieldLevel[parent] {
				return true
			}
			if hasKey(c, key, k) {
				return true
			}
		}
	case []any:
		for _, c := range t {
			if hasKey(c, key, "") {
				return true
			}
		}
	}
	return false
}

// FuzzValidateQuery: the query check never panics, refuses only with
// errInvalid, and nothing it accepts holds a script anywhere.
func FuzzValidateQuery(f *testing.F) {
	for _, s := range []string{
		`{"match_all":{}}`,
		`{"bool":{"must":[{"match":{"title":"a"}}],"filter":{"range":{"n":{"gte":1}}}}}`,
		`{"multi_match":{"query":"x","fields":["title^2","raw_*"]}}`,
		`{"terms_set":{"t":{"terms":["a"],"minimum_should_match_script":{"source":"1"}}}}`,
		`{"function_score":{"functions":[{"script_score":{"script":"1"}}]}}`,
		`{"terms":{"id":{"index":".security","id":"x","path":"p"}}}`,
		`{"match":{"title":{"query":"x","script":"1"}}}`,
		`{"constant_score":{"filter":{"script":{"script":"1"}}}}`,
		`{"query_string":{"query":"a:b","fields":["*"]}}`,
		`{"ids":{"values":["a",1,true]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q, ok := decodeJSONObject(data)
		if !ok {
			return
		}
		err := ValidateQuery(q)
		if err != nil {
			if !errors.Is(err, errInvalid) {
				t.Fatalf("refused with %v, not errInvalid", err)
			}
			return
		}
		for _, k := range []string{"script", "script_score", "minimum_should_match_script", "function_score", "terms_set", "wrapper"} {
			if hasKey(q, k, "") {
				t.Fatalf("accepted a query holding %q: %s", k, data)
			}
		}
	})
}

// FuzzValidateSettings: the settings check never panics, refuses only with
// errInvalid, and what it accepts holds only the allowlisted settings.
func FuzzValidateSettings(f *testing.F) {
	for _, s := range []string{
		`{"number_of_shards":2,"number_of_replicas":0,"refresh_interval":"5s"}`,
		`{"index":{"number_of_shards":"3"}}`,
		`{"index.default_pipeline":"x"}`,
		`{"index":{"blocks":{"read_only":true}}}`,
		`{"number_of_shards":[{"a":1}]}`,
		`{"index":{"similarity":{"s":{"type":"scripted","script":{"source":"1"}}}}}`,
		`{"refresh_interval":"-1"}`,
	} {
		f.Add([]byte(s))
	}
	allowed := map[string]bool{"number_of_shards": true, "number_of_replicas": true, "auto_expand_replicas": true, "refresh_interval": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ok := decodeJSONObject(data)
		if !ok {
			return
		}
		out, err := ValidateSettings(m)
		if err != nil {
			if !errors.Is(err, errInvalid) {
				t.Fatalf("refused with %v, not errInvalid", err)
			}
			return
		}
		for k := range out {
			if !allowed[k] {
				t.Fatalf("accepted setting %q from %s", k, data)
			}
		}
		if n, _ := out["number_of_shards"].(int); n < minShards || n > maxShards {
			t.Fatalf("accepted %v shards from %s", out["number_of_shards"], data)
		}
		// An explicit replica count turns the automatic one off, or
		// Elasticsearch would override it; without one the automatic
		// rule stays.
		if _, explicit := out["number_of_replicas"]; explicit != (out["auto_expand_replicas"] == "false") {
			t.Fatalf("number_of_replicas %v with auto_expand_replicas %v from %s", out["number_of_replicas"], out["auto_expand_replicas"], data)
		}
	})
}

// FuzzValidateIndexName: an accepted name is a concrete content index name
// with no pattern, list or path characters.
func FuzzValidateIndexName(f *testing.F) {
	for _, s := range []string{"news_raw_content", "a_classified_content", "*", ".security", "a,b_raw_content", "../x_raw_content", "_all", "A_raw_content", "x\x00_raw_content"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateIndexName(name) != nil {
			return
		}
		if !utf8.ValidString(name) || strings.ContainsAny(name, "*?,/\\#: \x00") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
			(!strings.HasSuffix(name, "_raw_content") && !strings.HasSuffix(name, "_classified_content")) {
			t.Fatalf("accepted %q", name)
		}
	})
}

// FuzzCursorDecode: decoding never panics, and only a cursor this codec
// signed for this index decodes.
func FuzzCursorDecode(f *testing.F) {
	cc := cursorCodec{key: bytes.Repeat([]byte("k"), 32)}
	good, err := cc.encode(cursor{Index: "a_raw_content", SearchAfter: []any{json.Number("1"), "doc-1"}, Sort: []SortField{{Field: "word_count"}}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{good, "", ".", "garbage", "eyJpIjoieCJ9.AAAA", good + "x", strings.Replace(good, ".", "..", 1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := cc.decode(s, "a_raw_content")
		if err != nil {
			if !errors.Is(err, errCursor) {
				t.Fatalf("refused with %v, not errCursor", err)
			}
			return
		}
		if c.Index != "a_raw_content" {
			t.Fatalf("decoded a cursor of %q", c.Index)
		}
		// Only the signed payload decodes; the fuzzer cannot forge an HMAC.
		p, _, _ := strings.Cut(s, ".")
		gp, _, _ := strings.Cut(good, ".")
		if p != gp {
			t.Fatalf("decoded an unsigned payload %q", s)
		}
	})
}
