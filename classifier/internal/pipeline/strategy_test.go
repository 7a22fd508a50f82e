package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/infrastructure/contentindex"
)

// The URL's class decides how a document is processed, and the classified
// document records it: a web page from its text, a social media or video
// page from its title and description only (its text, a feed, is not
// read), and an archive or file:// URL not at all.
func TestClassifyRecordsTheURLStrategy(t *testing.T) {
	t.Parallel()
	c := newPipeline(t)
	web, err := c.Classify(raw(nil))
	if err != nil {
		t.Fatal(err)
	}
	if web.ProcessingStrategy != "standard" || !web.IsProcessable || web.URLClass != "web_page" {
		t.Errorf("web page = %s/%v/%s, want standard, processable, web_page", web.ProcessingStrategy, web.IsProcessable, web.URLClass)
	}
	social, err := c.Classify(raw(func(d *contentindex.RawDocument) {
		d.URL = "https://www.facebook.com/cityhall/posts/1"
		d.Title = "City hall update"
		d.MetaDescription = "The mayor and council met on Tuesday."
		// The feed around the post talks of crimes the post is not about.
		d.RawText = "Trending: shooting, burglary, murder, theft."
	}))
	if err != nil {
		t.Fatal(err)
	}
	if social.ProcessingStrategy != "metadata_only" || !social.IsProcessable || social.URLClass != "social_media" {
		t.Errorf("social page = %s/%v/%s, want metadata_only, processable, social_media", social.ProcessingStrategy, social.IsProcessable, social.URLClass)
	}
	if social.IsCrimeRelated || strings.Join(social.Topics, ",") != "politics" {
		t.Errorf("social page topics = %v (crime %v), want politics only, from its description", social.Topics, social.IsCrimeRelated)
	}
	for _, u := range []string{"https://x.test/files/report.pdf", "file:///tmp/page.html"} {
		_, err := c.Classify(raw(func(d *contentindex.RawDocument) { d.URL = u }))
		var rej *admission.RejectionError
		if !errors.Is(err, ErrUnprocessable) || !errors.As(err, &rej) {
			t.Errorf("Classify(%s) = %v, want refused", u, err)
		}
	}
}
