package pipeline

import (
	"regexp"
	"strings"
)

// ContentType is the content-type stage's verdict.
type ContentType struct {
	Type       string
	Confidence float64
	// Method names the signal that decided: og_type, url_pattern or heuristic.
	Method string
}

// Content types.
const (
	TypeArticle = "article"
	TypePage    = "page"
	TypeVideo   = "video"
	TypeImage   = "image"
	TypeOther   = "other"
)

// Listing, category, tag, login and pagination pages are never articles.
var nonArticleURL = regexp.MustCompile(`(?i)/(category|categories|tag|tags|topics?|section|archive|search|login|signin|sign-in|register|account|page/\d+)(/|$|\?)|[?&]page=\d+`)

func detectContentType(ogType, rawURL string, words int, hasTitle, hasDate bool) ContentType {
	switch og := strings.ToLower(strings.TrimSpace(ogType)); {
	case og == "article" || og == "news" || strings.HasPrefix(og, "article"):
		if !nonArticleURL.MatchString(rawURL) {
			return ContentType{TypeArticle, 0.95, "og_type"}
		}
	case strings.HasPrefix(og, "video"):
		return ContentType{TypeVideo, 0.95, "og_type"}
	case og == "image" || strings.HasPrefix(og, "image"):
		return ContentType{TypeImage, 0.9, "og_type"}
	}
	if nonArticleURL.MatchString(rawURL) {
		return ContentType{TypePage, 0.85, "url_pattern"}
	}
	switch {
	case words >= 200 && hasTitle && hasDate:
		return ContentType{TypeArticle, 0.8, "heuristic"}
	case words >= 300 && hasTitle:
		return ContentType{TypeArticle, 0.65, "heuristic"}
	case words >= 50:
		return ContentType{TypePage, 0.6, "heuristic"}
	default:
		return ContentType{TypeOther, 0.5, "heuristic"}
	}
}
