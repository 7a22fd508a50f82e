package rawindex

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// withFields returns source with fields set (null for a nil value), every
// other field as it was. source is a _source as Elasticsearch returned it:
// its members are copied as they are, found by a scan of the top level
// (topLevel) rather than decoded; a source the scan does not follow (a key
// with an escape, anything unexpected) is decoded with encoding/json.
func withFields(source json.RawMessage, fields map[string]any) (json.RawMessage, error) {
	set := make(map[string][]byte, len(fields))
	for k, v := range fields {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("set field %s: %w", k, err)
		}
		set[k] = b
	}
	out := make([]byte, 0, len(source)+128)
	out = append(out, '{')
	member := func(key string, value []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, '"', ':')
		out = append(out, value...)
	}
	ok := topLevel(source, func(key, value []byte) {
		if _, replaced := set[string(key)]; !replaced {
			member(string(key), value)
		}
	})
	if !ok {
		return withFieldsDecoded(source, set)
	}
	for k, v := range set {
		member(k, v) // field names are plain: no escaping needed
	}
	return append(out, '}'), nil
}

// withFieldsDecoded is withFields through encoding/json.
func withFieldsDecoded(source json.RawMessage, set map[string][]byte) (json.RawMessage, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(source, &doc); err != nil {
		return nil, fmt.Errorf("set fields: %w", err)
	}
	if doc == nil {
		return nil, fmt.Errorf("set fields: source is not an object")
	}
	for k, v := range set {
		doc[k] = v
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("set fields: %w", err)
	}
	return out, nil
}

// topLevel calls fn with the key (unquoted) and raw value of each member of
// the JSON object src, in order, and reports whether it could follow src:
// false for anything but an object, a key with an escape sequence, or
// malformed input. It does not validate values beyond finding their end.
func topLevel(src []byte, fn func(key, value []byte)) bool {
	i := skipSpace(src, 0)
	if i >= len(src) || src[i] != '{' {
		return false
	}
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return skipSpace(src, i+1) == len(src)
	}
	for {
		if i >= len(src) || src[i] != '"' {
			return false
		}
		end := bytes.IndexByte(src[i+1:], '"')
		if end < 0 {
			return false
		}
		key := src[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = skipSpace(src, i+2+end)
		if i >= len(src) || src[i] != ':' {
			return false
		}
		i = skipSpace(src, i+1)
		vend, ok := valueEnd(src, i)
		if !ok {
			return false
		}
		fn(key, src[i:vend])
		i = skipSpace(src, vend)
		if i >= len(src) {
			return false
		}
		switch src[i] {
		case ',':
			i = skipSpace(src, i+1)
		case '}':
			return skipSpace(src, i+1) == len(src)
		default:
			return false
		}
	}
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value starting at src[i].
func valueEnd(src []byte, i int) (int, bool) {
	if i >= len(src) {
		return 0, false
	}
	switch src[i] {
	case '"':
		return stringEnd(src, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(src); j++ {
			switch src[j] {
			case '"':
				end, ok := stringEnd(src, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default: // a number, true, false or null
		j := i
		for j < len(src) && src[j] != ',' && src[j] != '}' && src[j] != ']' &&
			src[j] != ' ' && src[j] != '\t' && src[j] != '\n' && src[j] != '\r' {
			j++
		}
		return j, j > i
	}
}

// stringEnd returns the end of the JSON string starting at src[i] (a quote).
func stringEnd(src []byte, i int) (int, bool) {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}
