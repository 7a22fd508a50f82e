package topicmodel

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/rules"
)

// newsLike writes n documents of about words words each, shaped like news
// for the model: about a third of the words are keywords of the default
// lexicon (its sections and crime), the rest filler, a title of 8 words.
func newsLike(b *testing.B, n, words int) [][2]string {
	b.Helper()
	m, err := DefaultLexicon()
	if err != nil {
		b.Fatal(err)
	}
	filler := strings.Fields("the a of and to in said on for with that was is at by from it as after new more his her their were have has would year people")
	rng := rand.New(rand.NewPCG(uint64(n), uint64(words)))
	word := func() string {
		if rng.IntN(3) == 0 {
			return m.Terms[rng.IntN(len(m.Terms))]
		}
		return filler[rng.IntN(len(filler))]
	}
	out := make([][2]string, n)
	for i := range out {
		var t, body []string
		for range 8 {
			t = append(t, word())
		}
		for range words {
			body = append(body, word())
		}
		out[i] = [2]string{strings.Join(t, " "), strings.Join(body, " ")}
	}
	return out
}

// BenchmarkLexiconMemory is the heap the compiled default model holds, with
// the matcher the pipeline compiles it with.
func BenchmarkLexiconMemory(b *testing.B) {
	kind := rules.MatcherKind(os.Getenv("TOPICMODEL_BENCH_MATCHER"))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := DefaultLexicon()
	if err != nil {
		b.Fatal(err)
	}
	s, err := Compile(m, kind)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	for b.Loop() {
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "lexicon_heap_MB")
	b.ReportMetric(float64(len(m.Terms)), "lexicon_terms")
	runtime.KeepAlive(s)
}

// BenchmarkDecide is the default model's cost per document, on top of the
// rule engine's: two matcher passes (title, body), the logits and the
// decision, for short items (40 words) and full articles (500 words).
func BenchmarkDecide(b *testing.B) {
	m, err := DefaultLexicon()
	if err != nil {
		b.Fatal(err)
	}
	s, err := Compile(m, rules.MatcherKind(os.Getenv("TOPICMODEL_BENCH_MATCHER")))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		words int
	}{{"short", 40}, {"full", 500}} {
		docs := newsLike(b, 2000, c.words)
		b.Run(c.name, func(b *testing.B) {
			var n int
			start := time.Now()
			for b.Loop() {
				for _, d := range docs {
					sc := s.Score(d[0], d[1])
					_ = Decide(s, sc, nil, DecideConfig{})
				}
				n += len(docs)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n), "us/doc")
		})
	}
}
