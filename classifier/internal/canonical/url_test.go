package canonical

import (
	"errors"
	"testing"
)

func TestURL(t *testing.T) {
	c := New(Config{})
	cases := []struct{ in, want string }{
		{"https://example.com/news/story", "https://example.com/news/story"},
		{"http://EXAMPLE.com:80/news/story/", "https://example.com/news/story"},
		{"https://www.example.com:443/news/story#comments", "https://example.com/news/story"},
		{"https://example.com/news/story?utm_source=tw&utm_medium=social&fbclid=x&gclid=y", "https://example.com/news/story"},
		{"https://example.com/news/story/amp", "https://example.com/news/story"},
		{"https://example.com/amp/news/story", "https://example.com/news/story"},
		{"https://amp.example.com/news/story", "https://example.com/news/story"},
		{"https://www.amp.example.com/news/story", "https://example.com/news/story"},
		{"https://amp.www.example.com/news/story", "https://example.com/news/story"},
		{"http://www.www.g", "https://g"},
		{"https://example.com/news/story.amp.html", "https://example.com/news/story.html"},
		{"https://example.com/news/story?amp=1", "https://example.com/news/story"},
		{"https://example.com/news/story?outputType=amp", "https://example.com/news/story"},
		{"https://www.google.com/amp/s/example.com/news/story", "https://example.com/news/story"},
		{"https://example-com.cdn.ampproject.org/c/s/example.com/news/story", "https://example.com/news/story"},
		{"https://example.com/a/./b/../story", "https://example.com/a/story"},
		{"https://example.com//news//story", "https://example.com/news/story"},
		{"https://user:pw@example.com/x", "https://example.com/x"},
		{"https://example.com.", "https://example.com"},
		{"https://example.com/", "https://example.com"},
		{"https://example.com:8080/x", "https://example.com:8080/x"},
		{"http://[::1]:80/x", "https://[::1]/x"},
		{"http://[::1]:8080/x", "https://[::1]:8080/x"},
		// The article's own parameters stay, in a stable order.
		{"https://example.com/view?id=7&page=2", "https://example.com/view?id=7&page=2"},
		{"https://example.com/view?page=2&id=7&utm_campaign=z", "https://example.com/view?id=7&page=2"},
		{"https://example.com/view?tag=b&tag=a", "https://example.com/view?tag=a&tag=b"},
		// Case matters in the path and in values, not in the host.
		{"https://Example.COM/News/Story?Q=A", "https://example.com/News/Story?Q=A"},
		// A segment that merely contains "amp" is kept.
		{"https://example.com/news/camp-fire", "https://example.com/news/camp-fire"},
		{"https://example.com/amplifier", "https://example.com/amplifier"},
		// A strip that would leave a dot segment is not made.
		{"http://0/..Amp", "https://0/..Amp"},
		{"https://example.com/x/..amp.", "https://example.com/x/..amp."},
	}
	for _, tc := range cases {
		got, err := c.URL(tc.in)
		if err != nil {
			t.Errorf("URL(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestURLRefusesWhatIsNotAWebPage(t *testing.T) {
	c := New(Config{})
	for _, in := range []string{"", "file:///etc/passwd", "mailto:a@b.c", "/relative/path", "https://", "ftp://example.com/x", "http://%zz"} {
		if got, err := c.URL(in); !errors.Is(err, ErrNotWebURL) {
			t.Errorf("URL(%q) = %q, %v; want ErrNotWebURL", in, got, err)
		}
	}
}

func TestConfiguredTrackingParams(t *testing.T) {
	c := New(Config{TrackingParams: []string{"src", "x_*"}, KeepWWW: true})
	got, err := c.URL("https://www.example.com/s?src=feed&x_a=1&X_B=2&utm_source=kept")
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://www.example.com/s?utm_source=kept"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	none := New(Config{TrackingParams: []string{}})
	got, err = none.URL("https://example.com/s?utm_source=x")
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://example.com/s?utm_source=x"; got != want {
		t.Errorf("empty list: got %q, want %q", got, want)
	}
}

func TestDefaultTrackingParamsIsACopy(t *testing.T) {
	a := DefaultTrackingParams()
	a[0] = "changed"
	if DefaultTrackingParams()[0] == "changed" {
		t.Fatal("DefaultTrackingParams shares its backing array")
	}
}

// FuzzURL checks that a canonical URL is a fixed point: canonicalizing it
// again changes nothing, so two variants that meet once stay met.
func FuzzURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/news/story?utm_source=x#y", "http://[::1]:80/amp/a/../b.amp.html?b=2&a=1",
		"https://www.google.com/amp/s/amp.example.com/x/amp", "https://example.com/%2e%2e/x", "https://a.b/c?d=%zz",
	} {
		f.Add(s)
	}
	c := New(Config{})
	f.Fuzz(func(t *testing.T, in string) {
		out, err := c.URL(in)
		if err != nil {
			return
		}
		again, err := c.URL(out)
		if err != nil {
			t.Fatalf("URL(%q) = %q, which is refused: %v", in, out, err)
		}
		if again != out {
			t.Fatalf("not a fixed point: %q -> %q -> %q", in, out, again)
		}
	})
}
