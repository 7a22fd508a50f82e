// Package canonical reduces the many URLs one article is reachable under
// to one canonical form, so that the same story crawled as
// http://Example.com:80/news/story/?utm_source=x#top and
// https://example.com/news/story is recognised as the same URL.
//
// The canonical form is not a URL to fetch: the scheme is always https
// and parts a publisher may need (tracking parameters, an AMP path) are
// gone. It is an identity, kept beside the original URL.
package canonical

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// DefaultTrackingParams are the query parameters dropped by default: they
// say how a reader arrived, not what the page is. A name ending in "*" is
// a prefix.
var defaultTrackingParams = []string{
	"utm_*", "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid",
	"mc_cid", "mc_eid", "igshid", "_ga", "_gl", "_hsenc", "_hsmi", "mkt_tok",
	"ref_src", "cmpid", "ocid", "smid", "s_cid", "at_medium", "at_campaign",
	"amp", "outputtype",
}

// DefaultTrackingParams returns a copy of the default list, for a
// configuration to start from.
func DefaultTrackingParams() []string { return slices.Clone(defaultTrackingParams) }

// Config says what of a URL does not identify an article.
type Config struct {
	// TrackingParams are query parameter names (compared without case)
	// removed from the URL; a name ending in "*" removes every parameter
	// it prefixes. Nil means DefaultTrackingParams; an empty, non-nil
	// slice removes none.
	TrackingParams []string
	// KeepWWW keeps a leading "www." on the host; by default it is
	// removed, as publishers serve the same page on both.
	KeepWWW bool
}

// Canonicalizer computes canonical URLs under one Config. It is safe for
// concurrent use.
type Canonicalizer struct {
	exact    map[string]bool
	prefixes []string
	keepWWW  bool
}

// New returns a Canonicalizer for cfg.
func New(cfg Config) *Canonicalizer {
	params := cfg.TrackingParams
	if params == nil {
		params = defaultTrackingParams
	}
	c := &Canonicalizer{exact: make(map[string]bool, len(params)), keepWWW: cfg.KeepWWW}
	for _, p := range params {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			c.prefixes = append(c.prefixes, prefix)
			continue
		}
		c.exact[p] = true
	}
	return c
}

// ErrNotWebURL is wrapped by the error for a URL that is not an absolute
// http(s) URL with a host.
var ErrNotWebURL = errors.New("not an absolute http(s) URL")

// URL returns the canonical form of raw:
//   - scheme https (http and https name the same article) and no user info;
//   - host in lower case, without a trailing dot, a default port (80, 443),
//     or leading "www." (unless KeepWWW) and "amp." subdomains;
//   - Google's and Cloudflare's AMP cache URLs reduced to the publisher's;
//   - path with dot segments resolved, an AMP marker removed (a leading or
//     trailing "amp" segment, ".amp" before the extension) and no trailing
//     slash;
//   - query without tracking parameters, sorted by name then value;
//   - no fragment.
func (c *Canonicalizer) URL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("canonical url: %w: %w", ErrNotWebURL, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("canonical url %q: %w", clip(raw), ErrNotWebURL)
	}
	if inner, ok := ampCacheTarget(u); ok {
		u = inner
	}
	host, err := c.host(u)
	if err != nil {
		return "", err
	}
	out := url.URL{Scheme: "https", Host: host, Path: canonicalPath(u.Path)}
	out.RawQuery = c.query(u.Query())
	return out.String(), nil
}

func (c *Canonicalizer) host(u *url.URL) (string, error) {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if !validHost(host) {
		return "", fmt.Errorf("canonical url: %w: host %q", ErrNotWebURL, clip(host))
	}
	host = c.stripSubdomains(host)
	port := u.Port()
	if port == "80" || port == "443" {
		port = ""
	}
	if port != "" {
		return net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") { // an IPv6 literal keeps its brackets
		host = "[" + host + "]"
	}
	return host, nil
}

// stripSubdomains removes the leading "www." (unless KeepWWW) and "amp."
// labels until neither is left, so the canonical form of a canonical URL
// is itself: "www.www.example.com" and "amp.www.example.com" would
// otherwise lose one label per pass. The last label always stays.
func (c *Canonicalizer) stripSubdomains(host string) string {
	for {
		rest, ok := strings.CutPrefix(host, "amp.")
		if !ok && !c.keepWWW {
			rest, ok = strings.CutPrefix(host, "www.")
		}
		if !ok {
			return host
		}
		host = rest
	}
}

// ampCacheTarget recognises the AMP caches' URLs of a publisher's page:
// https://www.google.com/amp/s/example.com/story and
// https://example-com.cdn.ampproject.org/c/s/example.com/story.
func ampCacheTarget(u *url.URL) (*url.URL, bool) {
	host := strings.ToLower(u.Hostname())
	var rest string
	switch {
	case (host == "www.google.com" || host == "google.com") && strings.HasPrefix(u.Path, "/amp/"):
		rest = strings.TrimPrefix(u.Path, "/amp/")
	case strings.HasSuffix(host, ".cdn.ampproject.org"):
		rest = u.Path
		for _, p := range []string{"/c/", "/v/", "/i/"} {
			rest = strings.TrimPrefix(rest, p)
		}
	default:
		return nil, false
	}
	scheme := "http"
	if r, ok := strings.CutPrefix(rest, "s/"); ok {
		scheme, rest = "https", r
	}
	inner, err := url.Parse(scheme + "://" + rest)
	if err != nil || inner.Host == "" {
		return nil, false
	}
	inner.RawQuery = u.RawQuery
	return inner, true
}

func canonicalPath(p string) string {
	if p == "" {
		return ""
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	for _, s := range segs {
		switch s {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	// An AMP marker comes off the front ("/amp/story"), the end
	// ("/story/amp") and the last segment ("story.amp.html") until none is
	// left, so the canonical form of a canonical URL is itself
	// ("/amp/amp/x" and "/x/amp.amp" would otherwise lose one per pass).
	for stripped := true; stripped && len(out) > 0; {
		last := len(out) - 1
		switch bare := stripAMPExtension(out[last]); {
		case strings.EqualFold(out[0], "amp"):
			out = out[1:]
		case strings.EqualFold(out[last], "amp"):
			out = out[:last]
		case bare != out[last]:
			out[last] = bare
		default:
			stripped = false
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "/" + strings.Join(out, "/")
}

// stripAMPExtension turns "story.amp.html" into "story.html" and
// "story.amp" into "story". The search folds ASCII case only, so its
// indices are seg's even when seg holds bytes that are not UTF-8
// (strings.ToLower would turn each into a 3-byte U+FFFD). A segment the
// strip would turn into a dot segment ("..amp" into ".") is kept as it
// is: a second pass would resolve that dot segment and change the URL.
func stripAMPExtension(seg string) string {
	bare := seg
	lower := asciiLower(seg)
	if i := strings.LastIndex(lower, ".amp."); i > 0 {
		bare = seg[:i] + seg[i+len(".amp"):]
	} else if strings.HasSuffix(lower, ".amp") && len(seg) > len(".amp") {
		bare = seg[:len(seg)-len(".amp")]
	}
	if bare == "." || bare == ".." {
		return seg
	}
	return bare
}

// asciiLower folds the ASCII letters of s to lower case and leaves every
// other byte as it is: the result has s's length, byte for byte.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

func (c *Canonicalizer) query(q url.Values) string {
	for name := range q {
		if c.tracking(strings.ToLower(name)) {
			delete(q, name)
		}
	}
	for _, vs := range q {
		slices.Sort(vs)
	}
	return q.Encode() // sorted by name
}

func (c *Canonicalizer) tracking(name string) bool {
	if c.exact[name] {
		return true
	}
	for _, p := range c.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// validHost accepts an IPv6 literal or dot-separated, non-empty labels
// without spaces or control characters.
func validHost(host string) bool {
	if host == "" {
		return false
	}
	if strings.Contains(host, ":") {
		return net.ParseIP(host) != nil
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" || strings.ContainsFunc(label, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '%' }) {
			return false
		}
	}
	return true
}

func clip(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
