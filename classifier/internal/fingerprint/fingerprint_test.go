package fingerprint

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestExactIgnoresCaseAndPunctuation(t *testing.T) {
	a := Of("Storm Hits Coast", "Winds of 120 km/h -- and rain -- hit the coast on Monday.")
	b := Of("storm hits coast!", "Winds of 120 km h and rain hit the coast on Monday")
	if a.Exact != b.Exact {
		t.Fatalf("same words, different exact fingerprints: %s %s", a.Exact, b.Exact)
	}
	c := Of("Storm hits coast", "Winds of 130 km/h and rain hit the coast on Monday.")
	if a.Exact == c.Exact {
		t.Fatal("a changed number left the exact fingerprint unchanged")
	}
	if a.HasSim() || len(a.Sketch) != 0 || a.Words != 15 {
		t.Fatalf("short text got a near fingerprint: %+v", a)
	}
	if !Near(a, b) || Near(a, c) {
		t.Fatal("short texts must be compared exactly")
	}
}

func TestTitleAndBodyAreOneText(t *testing.T) {
	// A word moved between title and body is the same text.
	if Of("a b", "c").Exact != Of("a", "b c").Exact {
		t.Fatal("the same words split differently between title and body differ")
	}
}

func TestSketchIsSortedDistinctAndBounded(t *testing.T) {
	arts := articles(t)
	f := Of("", arts[0])
	if len(f.Sketch) != SketchSize {
		t.Fatalf("sketch has %d values, want %d", len(f.Sketch), SketchSize)
	}
	u := make([]uint64, len(f.Sketch))
	for i, v := range f.Sketch {
		u[i] = uint64(v)
	}
	if !slices.IsSorted(u) || len(slices.Compact(slices.Clone(u))) != len(u) {
		t.Fatalf("sketch not ascending and distinct: %v", u)
	}
}

// TestNearBitsSeparatesEditsFromOtherTexts replaces one sentence of each
// article and checks that the copy is near its original and that no two
// different articles are near. It logs the distances NearBits rests on.
func TestNearBitsSeparatesEditsFromOtherTexts(t *testing.T) {
	arts := articles(t)
	maxEdited, minOther, sharedSketch := 0, 64, 0
	maxOtherResemblance := 0.0
	for i, art := range arts {
		donor := sentences(arts[(i+7)%len(arts)])
		sents := sentences(art)
		sents[len(sents)/2] = donor[0]
		edited := Of("", strings.Join(sents, " "))
		orig := Of("", art)
		d := Distance(orig.Sim, edited.Sim)
		maxEdited = max(maxEdited, d)
		if !Near(orig, edited) {
			t.Errorf("article %d with one sentence replaced is %d bits away, over NearBits=%d", i, d, NearBits)
		}
		if Resemblance(orig.Sketch, edited.Sketch) < MinResemblance {
			t.Logf("article %d: edited copy's resemblance %.2f", i, Resemblance(orig.Sketch, edited.Sketch))
		}
		if overlap(orig.Sketch, edited.Sketch) == 0 {
			t.Errorf("article %d and its edited copy share no sketch value: the store would not find it", i)
		}
		for j := i + 1; j < len(arts); j++ {
			other := Of("", arts[j])
			minOther = min(minOther, Distance(orig.Sim, other.Sim))
			if Near(orig, other) {
				t.Errorf("articles %d and %d are different texts but near (%d bits)", i, j, Distance(orig.Sim, other.Sim))
			}
			if overlap(orig.Sketch, other.Sketch) > 0 {
				sharedSketch++
			}
			maxOtherResemblance = max(maxOtherResemblance, Resemblance(orig.Sketch, other.Sketch))
		}
	}
	t.Logf("%d articles: edited copies at most %d bits away, different articles at least %d; %d different pairs share a sketch value, at most %.2f resemblance",
		len(arts), maxEdited, minOther, sharedSketch, maxOtherResemblance)
}

func TestResemblance(t *testing.T) {
	if r := Resemblance([]int64{1, 2, 3, 4, 5, 6, 7, 8}, []int64{1, 2, 3, 4, 5, 6, 7, 8}); r != 1 {
		t.Errorf("same sketch: %v", r)
	}
	if r := Resemblance([]int64{1, 2, 3, 4, 5, 6, 7, 8}, []int64{9, 10, 11, 12, 13, 14, 15, 16}); r != 0 {
		t.Errorf("disjoint: %v", r)
	}
	// Union's 8 smallest: 1..4 (both), 5, 6 (a), 9, 10 (b) -> 4 of 8.
	if r := Resemblance([]int64{1, 2, 3, 4, 5, 6, 7, 8}, []int64{1, 2, 3, 4, 9, 10, 11, 12}); r != 0.5 {
		t.Errorf("half: %v", r)
	}
	if r := Resemblance(nil, []int64{1}); r != 0 {
		t.Errorf("empty: %v", r)
	}
}

func overlap(a, b []int64) int {
	n := 0
	for _, v := range a {
		if slices.Contains(b, v) {
			n++
		}
	}
	return n
}

// articles builds ~300-word news articles from the evaluation set's short
// stories, twelve stories each.
func articles(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../testdata/eval/labels.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bodies []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct{ Title, Body string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, rec.Title+". "+rec.Body)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var arts []string
	for i := 0; i+12 <= len(bodies); i += 12 {
		arts = append(arts, strings.Join(bodies[i:i+12], " "))
	}
	if len(arts) < 30 {
		t.Fatalf("only %d articles from the evaluation set", len(arts))
	}
	return arts
}

func sentences(s string) []string {
	var out []string
	for part := range strings.SplitAfterSeq(s, ". ") {
		if strings.TrimSpace(part) != "" {
			out = append(out, part)
		}
	}
	return out
}

func FuzzOf(f *testing.F) {
	f.Add("Title", "Some body text, with punctuation; and Ünïcödé.")
	f.Add("", strings.Repeat("word ", 80))
	f.Fuzz(func(t *testing.T, title, body string) {
		a := Of(title, body)
		if b := Of(title, body); a.Exact != b.Exact || a.Sim != b.Sim || !slices.Equal(a.Sketch, b.Sketch) {
			t.Fatalf("not deterministic: %+v %+v", a, b)
		}
		if len(a.Sketch) > SketchSize || !Near(a, a) {
			t.Fatalf("oversized sketch or not near itself: %+v", a)
		}
		if !a.HasSim() && (a.Sim != 0 || len(a.Sketch) != 0) {
			t.Fatalf("near fingerprint below MinWords: %+v", a)
		}
	})
}
