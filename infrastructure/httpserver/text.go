package httpserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// ValidText reports why s cannot be taken as text (invalid UTF-8 or a NUL
// character, which Postgres refuses with an error and which no name, filter
// or keyword needs), or "" when it can. name is what the message calls it.
func ValidText(name, s string) string {
	if !utf8.ValidString(s) {
		return name + " is not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return name + " contains a NUL character, which no text may hold"
	}
	return ""
}

// checkText refuses, with 400 invalid_text, a request whose path or query
// string (names and values) holds a NUL character or invalid UTF-8, or
// whose query string is malformed: the one rule for text in parameters,
// applied by every server before any handler, so such text never reaches a
// database or Elasticsearch.
func checkText() gin.HandlerFunc {
	return func(c *gin.Context) {
		if msg := URLTextProblem(c.Request.URL); msg != "" {
			WriteError(c, http.StatusBadRequest, CodeInvalidText, msg)
			return
		}
		c.Next()
	}
}

// URLTextProblem says why a request URL breaks the text rule (a NUL or
// invalid UTF-8 in the path or a query parameter, or a malformed query
// string), or "" when it does not.
func URLTextProblem(u *url.URL) string {
	if msg := ValidText("the path", u.Path); msg != "" {
		return msg
	}
	if msg := ValidText("the path", u.RawPath); msg != "" {
		return msg
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "the query string is malformed"
	}
	for k, vs := range q {
		name := "query parameter " + strconv.QuoteToASCII(clip(k))
		if msg := ValidText(name, k); msg != "" {
			return msg
		}
		for _, v := range vs {
			if msg := ValidText(name, v); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func clip(s string) string {
	const maxLen = 64
	if len(s) <= maxLen {
		return s
	}
	return s[:maxLen] + "..."
}

// ParamText returns the path parameter name, already checked by the server
// for NUL and UTF-8, refusing it with 400 when it is longer than maxBytes.
func ParamText(c *gin.Context, name string, maxBytes int) (string, bool) {
	v := c.Param(name)
	if len(v) > maxBytes {
		WriteError(c, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("%s must be at most %d bytes (got %d)", name, maxBytes, len(v)))
		return "", false
	}
	return v, true
}
