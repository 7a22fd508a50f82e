package httpserver_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/north-cloud/infrastructure/httpserver"
)

// FuzzDecodeCursor: any string is either refused with a 400 invalid_cursor
// or decodes to a keyset whose re-encoding decodes to the same keyset.
// Seeds: testdata/fuzz/FuzzDecodeCursor.
func FuzzDecodeCursor(f *testing.F) {
	f.Add("MjAyNi0wMS0wMlQwMzowNDowNS4wMDAwMDZafDBiNmY1YzFlLTExMTEtNGE0YS04YjhiLTAxMjM0NTY3ODlhYg")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := httpserver.DecodeCursor(s)
		if err != nil {
			var re *httpserver.RequestError
			if !errors.As(err, &re) || re.Status != http.StatusBadRequest || re.Code != httpserver.CodeInvalidCursor {
				t.Fatalf("DecodeCursor(%q) error %v is not a 400 invalid_cursor", s, err)
			}
			return
		}
		if !httpserver.IsUUID(k.ID) {
			t.Fatalf("DecodeCursor(%q) accepted id %q", s, k.ID)
		}
		again, err := httpserver.DecodeCursor(httpserver.EncodeCursor(k))
		if err != nil || !again.CreatedAt.Equal(k.CreatedAt) || again.ID != k.ID {
			t.Fatalf("re-encoding %+v gives %+v, %v", k, again, err)
		}
	})
}

type fuzzBody struct {
	Source    string   `json:"source"`
	Channel   string   `json:"channel"`
	All       bool     `json:"all"`
	Exhausted *bool    `json:"exhausted"`
	Keywords  []string `json:"keywords"`
	Nested    *struct {
		Name string `json:"name"`
	} `json:"nested"`
}

// FuzzUnmarshalStrict: any body is refused with a 400 (invalid_json or
// invalid_text) or accepted; an accepted body is one valid UTF-8 JSON
// object, and no string decoded from it holds a NUL.
// Seeds: testdata/fuzz/FuzzUnmarshalStrict.
func FuzzUnmarshalStrict(f *testing.F) {
	f.Add([]byte(`{"source":"a","all":true}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var v fuzzBody
		err := httpserver.UnmarshalStrict(body, &v, httpserver.JSONOptions{})
		if err != nil {
			var re *httpserver.RequestError
			if !errors.As(err, &re) || re.Status != http.StatusBadRequest ||
				(re.Code != httpserver.CodeInvalidJSON && re.Code != httpserver.CodeInvalidText) || re.Message == "" {
				t.Fatalf("UnmarshalStrict(%q) error %#v is not a 400 with a message", body, err)
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted invalid UTF-8 %q", body)
		}
		strs := append([]string{v.Source, v.Channel}, v.Keywords...)
		if v.Nested != nil {
			strs = append(strs, v.Nested.Name)
		}
		for _, s := range strs {
			if strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("accepted a NUL in %q", body)
			}
		}
	})
}
