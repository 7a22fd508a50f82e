package server

import (
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// inlineScript matches the body of an inline <script> (one without src):
// the built index.html has one, which applies the theme before the first
// paint.
var inlineScript = regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`)

// contentSecurityPolicy allows scripts, styles, fonts, images and fetches
// from the dashboard's own origin only, and no framing. Inline scripts are
// allowed by the hash of each inline script of dist/index.html, read once
// at start, never by 'unsafe-inline'; styles need no 'unsafe-inline' (Vue
// sets :style bindings through the CSSOM, which CSP does not restrict).
func contentSecurityPolicy(dist string) string {
	scripts := []string{"'self'"}
	if html, err := os.ReadFile(filepath.Join(dist, "index.html")); err == nil {
		for _, m := range inlineScript.FindAllSubmatch(html, -1) {
			if strings.Contains(strings.ToLower(string(m[1])), "src=") {
				continue
			}
			sum := sha256.Sum256(m[2])
			scripts = append(scripts, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
		}
	}
	return strings.Join([]string{
		"default-src 'self'",
		"script-src " + strings.Join(scripts, " "),
		"style-src 'self'",
		"img-src 'self' data:",
		"font-src 'self'",
		"connect-src 'self'",
		"object-src 'none'",
		"base-uri 'self'",
		"form-action 'self'",
		"frame-ancestors 'none'",
	}, "; ")
}
