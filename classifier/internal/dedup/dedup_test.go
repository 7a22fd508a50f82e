package dedup_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/canonical"
	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/dedup"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/fingerprint"
)

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	return db
}

const article = `The city council voted on Tuesday to approve a new budget for the coming year after a long debate over transit funding.
Councillors agreed to raise property taxes by two per cent, below the four per cent staff had proposed in the spring.
The mayor said the compromise protects bus service on the busiest routes while delaying two road projects until the province confirms its share.
Opponents argued the delay will cost more later because construction prices keep rising every year.
A motion to cut the police budget by one per cent failed by a vote of nine to six after an hour of public comments.
Residents who spoke asked for more snow clearing on side streets and for longer hours at the public library branches in the east end.
The budget also sets aside money for a new fire station in the north end, which the fire chief said would cut response times by two minutes.
Staff will report back in March on the cost of extending the light rail line to the airport.`

func doc(c *canonical.Canonicalizer, index, id, source, url, title, body string) dedup.Doc {
	cu, err := c.URL(url)
	if err != nil {
		panic(err)
	}
	return dedup.Doc{Key: domain.DocKey{Index: index, ID: id}, Source: source, CanonicalURL: cu, Fingerprint: fingerprint.Of(title, body)}
}

func TestFiveURLVariantsGiveOneOriginalAndFourDuplicates(t *testing.T) {
	db := openDB(t)
	s := dedup.New(db, dedup.Config{})
	c := canonical.New(canonical.Config{})
	ctx := context.Background()
	variants := []string{
		"https://news.example.com/2026/11/budget-vote",
		"http://NEWS.example.com:80/2026/11/budget-vote/",
		"https://news.example.com/2026/11/budget-vote?utm_source=twitter&fbclid=abc",
		"https://news.example.com/2026/11/budget-vote#comments",
		"https://news.example.com/2026/11/budget-vote/amp",
	}
	// The first two arrive in one batch, the rest one by one; the bodies
	// differ (a page re-rendered), so only the URL makes them duplicates.
	var docs []dedup.Doc
	for i, u := range variants {
		docs = append(docs, doc(c, "city_raw_content", fmt.Sprint("v", i), "city", u, "Budget vote", fmt.Sprintf("rendering %d of the page", i)))
	}
	got, err := s.Check(ctx, docs[:2])
	if err != nil {
		t.Fatal(err)
	}
	// The original's outbox row is written: the URL is its.
	if err := s.Published(ctx, docs[:1]); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs[2:] {
		v, err := s.Check(ctx, []dedup.Doc{d})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v...)
	}
	original := docs[0].Key
	if got[0].Kind != dedup.None || !got[0].Publish {
		t.Fatalf("first variant: %+v, want an original that is published", got[0])
	}
	for i, v := range got[1:] {
		if v.Kind != dedup.URL || v.Of != original || v.Publish {
			t.Errorf("variant %d: %+v, want a URL duplicate of %v, not published", i+1, v, original)
		}
	}
	// Classified again (a crash before the commit point, a reprocess), the
	// original stays the original and a duplicate stays a duplicate of it.
	again, err := s.Check(ctx, []dedup.Doc{docs[0], docs[3]})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Kind != dedup.None || again[1].Kind != dedup.URL || again[1].Of != original {
		t.Fatalf("checked again: %+v", again)
	}
}

func TestNearCopyInAnotherSourceFollowsThePolicy(t *testing.T) {
	for _, policy := range []dedup.Policy{dedup.Flag, dedup.Skip} {
		t.Run(string(policy), func(t *testing.T) {
			db := openDB(t)
			s := dedup.New(db, dedup.Config{ContentPolicy: policy})
			c := canonical.New(canonical.Config{})
			ctx := context.Background()
			orig := doc(c, "wire_raw_content", "a1", "wire", "https://wire.example.org/budget", "Council approves budget", article)
			edited := strings.Replace(article, "Opponents argued the delay will cost more later because construction prices keep rising every year.",
				"Critics said the delay could end up costing the city much more in the long run.", 1)
			if edited == article {
				t.Fatal("the edit did not apply")
			}
			copyDoc := doc(c, "daily_raw_content", "d7", "daily", "https://daily.example.net/local/council-budget", "Council approves budget", edited)
			other := doc(c, "daily_raw_content", "d8", "daily", "https://daily.example.net/sports/game", "Home team wins",
				strings.Repeat("The home side scored twice in the second half and held on for a win in front of a full stadium. ", 6))
			if _, err := s.Check(ctx, []dedup.Doc{orig}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Check(ctx, []dedup.Doc{copyDoc, other})
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Kind != dedup.Content || got[0].Of != orig.Key || got[0].Publish != (policy == dedup.Flag) {
				t.Errorf("edited copy: %+v, want a content duplicate of %v, published=%v", got[0], orig.Key, policy == dedup.Flag)
			}
			if got[1].Kind != dedup.None || !got[1].Publish {
				t.Errorf("unrelated article: %+v, want an original", got[1])
			}
			// An exact copy in the same batch as its original is caught too.
			c1 := doc(c, "x_raw_content", "1", "x", "https://x.example/a", "Same words", article)
			c2 := doc(c, "y_raw_content", "1", "y", "https://y.example/b", "Same words", article)
			got, err = s.Check(ctx, []dedup.Doc{c1, c2})
			if err != nil {
				t.Fatal(err)
			}
			if got[1].Kind != dedup.Content {
				t.Errorf("exact copy of an earlier document: %+v", got[1])
			}
		})
	}
}

func TestExpiredURLIsTakenOverAndCleanedUp(t *testing.T) {
	db := openDB(t)
	s := dedup.New(db, dedup.Config{})
	c := canonical.New(canonical.Config{})
	ctx := context.Background()
	a := doc(c, "s_raw_content", "old", "s", "https://s.example/story", "t", "old body")
	b := doc(c, "s_raw_content", "new", "s", "https://s.example/story", "t", "new body")
	if _, err := s.Check(ctx, []dedup.Doc{a}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE canonical_urls SET first_seen_at = NOW() - INTERVAL '8 days'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE content_fingerprints SET first_seen_at = NOW() - INTERVAL '8 days'`); err != nil {
		t.Fatal(err)
	}
	got, err := s.Check(ctx, []dedup.Doc{b})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Kind != dedup.None {
		t.Fatalf("after the window: %+v, want an original", got[0])
	}
	n, err := s.Cleanup(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 { // a's fingerprint; the URL row now belongs to b
		t.Fatalf("cleanup deleted %d rows, want 1", n)
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]dedup.Policy{"flag": dedup.Flag, " SKIP ": dedup.Skip} {
		if got, err := dedup.ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := dedup.ParsePolicy("drop"); err == nil {
		t.Error("ParsePolicy(drop) accepted")
	}
}

// Two near copies new in one batch: the one with the smaller key is the
// original, whatever their order in the batch, and checking either again
// (a reprocess) gives the same verdict.
func TestVerdictIsStableWhenClassifiedAgain(t *testing.T) {
	db := openDB(t)
	s := dedup.New(db, dedup.Config{})
	c := canonical.New(canonical.Config{})
	ctx := context.Background()
	a := doc(c, "s_raw_content", "a", "s", "https://s.example/a", "Budget", article)
	b := doc(c, "s_raw_content", "b", "s", "https://s.example/b", "Budget", article+" One more line.")
	first, err := s.Check(ctx, []dedup.Doc{b, a}) // b first in the batch
	if err != nil {
		t.Fatal(err)
	}
	if first[1].Kind != dedup.None || first[0].Kind != dedup.Content || first[0].Of != a.Key {
		t.Fatalf("first check: b %+v, a %+v; want a original, b its copy", first[0], first[1])
	}
	for _, d := range []dedup.Doc{a, b} {
		again, err := s.Check(ctx, []dedup.Doc{d})
		if err != nil {
			t.Fatal(err)
		}
		want := first[1]
		if d.Key == b.Key {
			want = first[0]
		}
		if again[0] != want {
			t.Errorf("%s checked again: %+v, first %+v", d.Key.ID, again[0], want)
		}
	}
	// A text seen later is never the original of one seen earlier.
	late := doc(c, "a_raw_content", "0", "a", "https://a.example/0", "Budget", article)
	v, err := s.Check(ctx, []dedup.Doc{late})
	if err != nil {
		t.Fatal(err)
	}
	if v[0].Kind != dedup.Content || v[0].Of != a.Key {
		t.Fatalf("a later copy with a smaller key: %+v, want a copy of %v", v[0], a.Key)
	}
	again, err := s.Check(ctx, []dedup.Doc{a})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Kind != dedup.None {
		t.Fatalf("the original after a later copy: %+v", again[0])
	}
}

// A URL duplicate's text is nobody's original: the holder of the URL is
// not made a content duplicate of its own variant.
func TestURLDuplicateIsNeverAContentOriginal(t *testing.T) {
	db := openDB(t)
	s := dedup.New(db, dedup.Config{})
	c := canonical.New(canonical.Config{})
	ctx := context.Background()
	holder := doc(c, "s_raw_content", "z", "s", "https://s.example/story", "Budget", article)
	variant := doc(c, "s_raw_content", "a", "s", "https://s.example/story/?utm_source=x", "Budget", article)
	if _, err := s.Check(ctx, []dedup.Doc{holder}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		v, err := s.Check(ctx, []dedup.Doc{variant, holder})
		if err != nil {
			t.Fatal(err)
		}
		if v[0].Kind != dedup.URL || v[0].Of != holder.Key || v[1].Kind != dedup.None {
			t.Fatalf("variant %+v holder %+v; want the variant a URL duplicate and the holder an original", v[0], v[1])
		}
	}
}

// A near copy found only past the first candidates read is still found:
// two earlier texts that share one shingle with the document (a sketch
// value, so they are candidates, but not near) come before its near copy.
func TestNearCopyBehindCandidatesThatAreNotNear(t *testing.T) {
	db := openDB(t)
	s := dedup.New(db, dedup.Config{})
	ctx := context.Background()
	d := fingerprint.Of("Budget vote", article)
	words := strings.Fields(strings.ToLower(article))
	filler := func(n int) string {
		var b strings.Builder
		for i := range 60 {
			fmt.Fprintf(&b, " unrelated%d word%d", n, i)
		}
		return b.String()
	}
	var sharing []string // texts sharing a sketch value with d, not near it
	for i := 0; i+3 <= len(words) && len(sharing) < 2; i++ {
		text := strings.Join(words[i:i+3], " ") + filler(len(sharing))
		fp := fingerprint.Of("Other", text)
		shared := false
		for _, v := range fp.Sketch {
			shared = shared || slices.Contains(d.Sketch, v)
		}
		if shared && !fingerprint.Near(fp, d) {
			sharing = append(sharing, text)
		}
	}
	if len(sharing) < 2 {
		t.Fatal("found no two texts sharing a sketch value without being near")
	}
	stored := []dedup.Doc{
		{Key: domain.DocKey{Index: "s_raw_content", ID: "a1"}, Source: "s", Fingerprint: fingerprint.Of("Other", sharing[0])},
		{Key: domain.DocKey{Index: "s_raw_content", ID: "a2"}, Source: "s", Fingerprint: fingerprint.Of("Other", sharing[1])},
		{Key: domain.DocKey{Index: "s_raw_content", ID: "a3"}, Source: "s", Fingerprint: fingerprint.Of("Budget vote", article+" Updated at noon.")},
	}
	if _, err := s.Check(ctx, stored); err != nil {
		t.Fatal(err)
	}
	got, err := s.Check(ctx, []dedup.Doc{{Key: domain.DocKey{Index: "t_raw_content", ID: "b"}, Source: "t", Fingerprint: d}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (domain.DocKey{Index: "s_raw_content", ID: "a3"}); got[0].Kind != dedup.Content || got[0].Of != want {
		t.Fatalf("verdict %+v, want a content duplicate of %v (behind two candidates that are not near)", got[0], want)
	}
}

// A canonical URL belongs only to a document that was published. With the
// skip policy, a copy of an earlier text is not published and claims no
// URL, so a later document at its URL with new text is an original and is
// published (before, the skipped copy held the URL for the window and the
// new text was held back as its URL duplicate: published by no one). An
// original that never gets published (it failed for good) holds its URL
// only for the claim lease; meanwhile a document at that URL is published
// flagged rather than held back, and once the lease lapses the next one
// takes the URL.
func TestURLBelongsOnlyToAPublishedDocument(t *testing.T) {
	db := openDB(t)
	s := dedup.New(db, dedup.Config{ContentPolicy: dedup.Skip})
	c := canonical.New(canonical.Config{})
	ctx := context.Background()
	orig := doc(c, "wire_raw_content", "a", "wire", "https://wire.example/budget", "Budget", article)
	if _, err := s.Check(ctx, []dedup.Doc{orig}); err != nil {
		t.Fatal(err)
	}
	if err := s.Published(ctx, []dedup.Doc{orig}); err != nil {
		t.Fatal(err)
	}
	copyDoc := doc(c, "daily_raw_content", "c", "daily", "https://daily.example/story", "Budget", article)
	got, err := s.Check(ctx, []dedup.Doc{copyDoc})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Kind != dedup.Content || got[0].Publish {
		t.Fatalf("copy under the skip policy: %+v, want a content duplicate not published", got[0])
	}
	update := doc(c, "daily_raw_content", "u", "daily", "https://daily.example/story", "Storm closes schools",
		strings.Repeat("A winter storm closed every school in the district on Monday as snow kept falling. ", 6))
	got, err = s.Check(ctx, []dedup.Doc{update})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Kind != dedup.None || !got[0].Publish {
		t.Fatalf("new text at the skipped copy's URL: %+v, want an original that is published", got[0])
	}

	// An original that is never published: the next document at its URL
	// is published flagged, and after the lease it takes the URL over.
	lost := doc(c, "city_raw_content", "lost", "city", "https://city.example/notice", "Notice", "a notice about parking")
	if _, err := s.Check(ctx, []dedup.Doc{lost}); err != nil {
		t.Fatal(err)
	}
	next := doc(c, "city_raw_content", "next", "city", "https://city.example/notice", "Notice", "the notice, corrected")
	got, err = s.Check(ctx, []dedup.Doc{next})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Kind != dedup.URL || got[0].Of != lost.Key || !got[0].Publish {
		t.Fatalf("behind an original not published: %+v, want a URL duplicate published flagged", got[0])
	}
	if _, err := db.Exec(`UPDATE canonical_urls SET first_seen_at = NOW() - INTERVAL '16 minutes' WHERE content_id = 'lost'`); err != nil {
		t.Fatal(err)
	}
	got, err = s.Check(ctx, []dedup.Doc{next})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Kind != dedup.None || !got[0].Publish {
		t.Fatalf("after the lapsed claim's lease: %+v, want an original", got[0])
	}
}
