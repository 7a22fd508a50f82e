package admission_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawtest"
)

// Seed 004's URL classes are recognised at the door, each with its
// strategy: file:// and archive, document or executable extensions are
// refused with the class and reason; social media and video platform pages
// are admitted, to be classified from their metadata only.
func TestURLClassesAtTheDoor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url         string
		class       admission.URLClass
		strategy    admission.Strategy
		processable bool
	}{
		{"https://news.test/2024/story", admission.ClassWebPage, admission.StrategyStandard, true},
		{"https://news.test/story.html?x=.zip", admission.ClassWebPage, admission.StrategyStandard, true},
		{"file:///var/crawl/page.html", admission.ClassFileURL, admission.StrategyRefuse, false},
		{"https://news.test/files/report.PDF", admission.ClassUnsupportedExtension, admission.StrategyRefuse, false},
		{"http://mirror.test/release.tar", admission.ClassUnsupportedExtension, admission.StrategyRefuse, false},
		{"https://mirror.test/backup.tar.gz", admission.ClassUnsupportedExtension, admission.StrategyRefuse, false},
		{"https://dl.test/setup.exe", admission.ClassUnsupportedExtension, admission.StrategyRefuse, false},
		{"https://dl.test/app.dmg", admission.ClassUnsupportedExtension, admission.StrategyRefuse, false},
		{"https://dl.test/archive.zip", admission.ClassUnsupportedExtension, admission.StrategyRefuse, false},
		{"https://www.facebook.com/cityhall/posts/1", admission.ClassSocialMedia, admission.StrategyMetadataOnly, true},
		{"https://x.com/police/status/1", admission.ClassSocialMedia, admission.StrategyMetadataOnly, true},
		{"https://notx.com/a", admission.ClassWebPage, admission.StrategyStandard, true},
		{"https://www.youtube.com/watch?v=abc", admission.ClassVideoPlatform, admission.StrategyMetadataOnly, true},
		{"https://youtu.be/abc", admission.ClassVideoPlatform, admission.StrategyMetadataOnly, true},
		{"https://vimeo.com/123", admission.ClassVideoPlatform, admission.StrategyMetadataOnly, true},
	}
	for _, c := range cases {
		a := admission.AssessURL(c.url)
		if a.Class != c.class || a.Strategy != c.strategy || a.Processable != c.processable {
			t.Errorf("AssessURL(%q) = %+v, want %s/%s/%v", c.url, a, c.class, c.strategy, c.processable)
		}
		if c.class != admission.ClassWebPage && a.Reason == "" {
			t.Errorf("AssessURL(%q) gives no reason", c.url)
		}
		raw := &domain.RawContent{RawDocument: rawtest.Doc("alpha", "d1", time.Now()), Index: "alpha_raw_content"}
		raw.URL = c.url
		err := admission.Admit(raw, admission.Limits{})
		if c.strategy == admission.StrategyRefuse {
			var rej *admission.RejectionError
			if !errors.As(err, &rej) || rej.Field != "url" || !strings.Contains(err.Error(), string(c.class)) {
				t.Errorf("Admit(%q) = %v, want a url refusal naming %s", c.url, err, c.class)
				continue
			}
			got, ok := admission.AssessFailure(true, "unprocessable: "+err.Error())
			if !ok || got.Class != c.class || got.Strategy != admission.StrategyRefuse || got.Processable || got.Reason == "" {
				t.Errorf("AssessFailure of %q = %+v, %v", err, got, ok)
			}
		} else if err != nil {
			t.Errorf("Admit(%q) = %v, want admitted", c.url, err)
		}
	}
	if _, ok := admission.AssessFailure(false, "es timeout"); ok {
		t.Error("AssessFailure of a timeout says it was decided at the door")
	}
	if a, ok := admission.AssessFailure(true, "raw_text: empty, and so is title"); !ok || a.Strategy != admission.StrategyRefuse || a.Class != "" {
		t.Errorf("AssessFailure of another refusal = %+v, %v", a, ok)
	}
}
