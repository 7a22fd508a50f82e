package admission

import (
	"net/url"
	"path"
	"slices"
	"strings"
)

// URLClass is what a document's URL says about whether its text can be
// classified (queue hygiene, seed 004). Each class has one Strategy.
type URLClass string

// The URL classes.
const (
	// ClassWebPage is every URL no other class claims: an http(s) page.
	ClassWebPage URLClass = "web_page"
	// ClassFileURL is a file:// URL: a path on the crawler's machine, not
	// a page anyone else can read.
	ClassFileURL URLClass = "file_url"
	// ClassUnsupportedExtension is a URL whose path ends in an archive,
	// document or executable extension (UnsupportedExtensions): what the
	// crawler stored is not an article's text.
	ClassUnsupportedExtension URLClass = "unsupported_extension"
	// ClassSocialMedia is a page of a social network (SocialMediaHosts):
	// its text is a feed, comments and navigation around a short post.
	ClassSocialMedia URLClass = "social_media"
	// ClassVideoPlatform is a page of a video platform (VideoPlatformHosts):
	// its text is player controls and recommendations.
	ClassVideoPlatform URLClass = "video_platform"
)

// Strategy is how the classifier processes a document of a URL class. It is
// recorded as processing_strategy on the classified document, and on the
// dead-letter entry of a refused one.
type Strategy string

// The strategies.
const (
	// StrategyStandard classifies the document from its title and text.
	StrategyStandard Strategy = "standard"
	// StrategyMetadataOnly classifies the document from its title and meta
	// description only, as stored: nothing is fetched, and the page text
	// (a feed, a player) is not read.
	StrategyMetadataOnly Strategy = "metadata_only"
	// StrategyRefuse refuses the document at the door with the reason: it
	// is dead-lettered as VALIDATION_ERROR with no retries and its raw
	// document flipped to failed.
	StrategyRefuse Strategy = "refuse"
)

// UnsupportedExtensions are the path extensions of ClassUnsupportedExtension.
func UnsupportedExtensions() []string {
	return []string{".zip", ".tar", ".gz", ".tgz", ".pdf", ".exe", ".dmg"}
}

// SocialMediaHosts are the hosts (and their subdomains) of ClassSocialMedia.
func SocialMediaHosts() []string {
	return []string{"facebook.com", "fb.com", "instagram.com", "twitter.com", "x.com", "tiktok.com",
		"linkedin.com", "reddit.com", "threads.net", "bsky.app", "pinterest.com", "snapchat.com", "mastodon.social"}
}

// VideoPlatformHosts are the hosts (and their subdomains) of
// ClassVideoPlatform.
func VideoPlatformHosts() []string {
	return []string{"youtube.com", "youtu.be", "vimeo.com", "dailymotion.com", "twitch.tv", "rumble.com"}
}

// Assessment is what the door decided about a document's URL.
type Assessment struct {
	Class    URLClass `json:"url_class"`
	Strategy Strategy `json:"processing_strategy"`
	// Processable is false when the strategy is StrategyRefuse.
	Processable bool `json:"is_processable"`
	// Reason says why a class other than ClassWebPage was chosen; empty
	// for a web page.
	Reason string `json:"failure_reason,omitempty"`
}

// AssessURL returns the class and strategy of a document's URL. It does not
// check that the URL is well formed (Admit does); an unparsable URL is a
// web page here.
func AssessURL(raw string) Assessment {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return Assessment{Class: ClassWebPage, Strategy: StrategyStandard, Processable: true}
	}
	if strings.EqualFold(u.Scheme, "file") {
		return refused(ClassFileURL, "file:// URLs name a file on the crawler's machine, not a web page")
	}
	if ext := strings.ToLower(path.Ext(u.Path)); slices.Contains(UnsupportedExtensions(), ext) {
		return refused(ClassUnsupportedExtension, "the path ends in "+ext+", an archive, document or executable whose text is not an article")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	switch {
	case hostIn(host, SocialMediaHosts()):
		return Assessment{Class: ClassSocialMedia, Strategy: StrategyMetadataOnly, Processable: true,
			Reason: "social media page (" + host + "): classified from its title and description, not its feed"}
	case hostIn(host, VideoPlatformHosts()):
		return Assessment{Class: ClassVideoPlatform, Strategy: StrategyMetadataOnly, Processable: true,
			Reason: "video platform page (" + host + "): classified from its title and description, not its player"}
	}
	return Assessment{Class: ClassWebPage, Strategy: StrategyStandard, Processable: true}
}

func refused(c URLClass, reason string) Assessment {
	return Assessment{Class: c, Strategy: StrategyRefuse, Processable: false, Reason: reason}
}

// hostIn reports whether host is one of hosts or a subdomain of one.
func hostIn(host string, hosts []string) bool {
	for _, h := range hosts {
		if host == h || strings.HasSuffix(host, "."+h) {
			return true
		}
	}
	return false
}

// refuseByClass is the refusal of a URL class whose strategy is
// StrategyRefuse: "url: <class>: <url>: <reason>", so that the class can be
// read back from a stored failure (AssessFailure).
func refuseByClass(a Assessment, rawURL string) error {
	return reject("url", "%s: %q: %s", a.Class, Clip(rawURL, maxQuotedBytes), a.Reason)
}

// AssessFailure reads back what the door decided from a failure's error
// code and message, for a dead-letter entry: a refusal by URL class gives
// its class's strategy and reason; any other VALIDATION_ERROR refusal is
// StrategyRefuse with the message as reason; other failures (an outage, a
// timeout) were processable, and ok is false.
func AssessFailure(validation bool, message string) (a Assessment, ok bool) {
	if !validation {
		return Assessment{}, false
	}
	for _, c := range []URLClass{ClassFileURL, ClassUnsupportedExtension} {
		if _, rest, found := strings.Cut(message, "url: "+string(c)+": "); found {
			return Assessment{Class: c, Strategy: StrategyRefuse, Reason: rest}, true
		}
	}
	return Assessment{Strategy: StrategyRefuse, Reason: message}, true
}
