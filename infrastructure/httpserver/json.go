package httpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// JSONOptions relax the strict decoding of DecodeJSON for one route.
type JSONOptions struct {
	// AllowUnknownFields accepts fields the target does not have. Only for
	// bodies that are documents copied from elsewhere (a raw document
	// pasted from Elasticsearch), where an extra field is not a typo.
	AllowUnknownFields bool
	// UseNumber decodes numbers into an any as json.Number.
	UseNumber bool
	// AllowNull accepts null as a field's value. By default a null is
	// refused wherever it appears: Go would decode {"source": null} as if
	// source were absent, so a client's null would silently widen a filter.
	AllowNull bool
}

// DecodeJSON reads the request body into v under the one rule every API
// follows: exactly one JSON object (not null, not empty, not an array),
// valid UTF-8 with no NUL character in any string, no unknown field, and
// nothing but white space after it. It answers the refusal itself (400
// invalid_json or invalid_text, 413 body_too_large) and returns false, or
// returns true with v filled.
func DecodeJSON(c *gin.Context, v any) bool {
	return DecodeJSONWith(c, v, JSONOptions{})
}

// DecodeJSONWith is DecodeJSON with options.
func DecodeJSONWith(c *gin.Context, v any, opts JSONOptions) bool {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			WriteError(c, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body is too large")
			return false
		}
		WriteError(c, http.StatusBadRequest, CodeInvalidJSON, "could not read the request body")
		return false
	}
	if err := UnmarshalStrict(body, v, opts); err != nil {
		if !WriteRequestError(c, err) {
			WriteError(c, http.StatusBadRequest, CodeInvalidJSON, err.Error())
		}
		return false
	}
	return true
}

// UnmarshalStrict decodes body into v under DecodeJSON's rules and returns
// a *RequestError naming the first rule broken.
func UnmarshalStrict(body []byte, v any, opts JSONOptions) error {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return invalidJSON("request body must be a JSON object (it is empty)")
	case bytes.Equal(trimmed, []byte("null")):
		return invalidJSON("request body must be a JSON object, not null")
	case trimmed[0] != '{':
		return invalidJSON("request body must be a JSON object")
	case !utf8.Valid(body):
		return invalidText("request body is not valid UTF-8")
	case hasJSONNul(body):
		return invalidText(`request body contains a NUL character (\u0000), which no text may hold`)
	case !opts.AllowNull && hasJSONNull(body):
		return invalidJSON("request body must not hold null values: leave the field out instead")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if !opts.AllowUnknownFields {
		dec.DisallowUnknownFields()
	}
	if opts.UseNumber {
		dec.UseNumber()
	}
	if err := dec.Decode(v); err != nil {
		return invalidJSON("malformed JSON: " + jsonProblem(err))
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return invalidJSON("malformed JSON: trailing data after the object")
	}
	return nil
}

func invalidJSON(msg string) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Code: CodeInvalidJSON, Message: msg}
}

func invalidText(msg string) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Code: CodeInvalidText, Message: msg}
}

// hasJSONNul reports whether a JSON text holds a string (key or value) with
// a NUL character. A raw NUL byte is a syntax error already; only the escape
// \u0000 can carry one, so texts without it are not scanned.
func hasJSONNul(body []byte) bool {
	return bytes.Contains(body, []byte(`\u0000`)) && anyJSONToken(body, func(tok json.Token) bool {
		s, ok := tok.(string)
		return ok && strings.IndexByte(s, 0) >= 0
	})
}

// hasJSONNull reports whether a JSON text holds a null value anywhere.
// Texts without the word null are not scanned.
func hasJSONNull(body []byte) bool {
	return bytes.Contains(body, []byte("null")) && anyJSONToken(body, func(tok json.Token) bool { return tok == nil })
}

// anyJSONToken reports whether match holds for a token of a JSON text,
// reading it up to the first match, its end or a syntax error (which
// Decode reports).
func anyJSONToken(body []byte, match func(json.Token) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if match(tok) {
			return true
		}
	}
}

// jsonProblem describes a decode error in the client's terms, without Go
// type names.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("%s: must be %s (got %s)", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return "the body must be a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	default:
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "json: ")
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return msg
	}
}

func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "float64", "float32":
		return "a number"
	case "int", "int64", "int32", "int16", "int8", "uint", "uint64", "uint32":
		return "an integer"
	}
	return kind
}
