package rules

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The benchmarks size their own workload (scripts/bench.sh runs them with
// -benchtime 1x) and report figures with b.ReportMetric:
//
//	ns/doc, MB/s        Engine.Match (normalize + match + score) on one core
//	matcher_ns/doc      the matcher alone on pre-normalized text
//	build_ms, heap_MB   NewEngine time and the heap it retains
//	x_faster_than_naive, x_faster_than_aho_corasick   ns/doc ratios
//
// The workload is topical, like news and rules: 50 topics each own 200
// pseudo-words (10,000 keyword-eligible words) and a pool of 1,200 phrases of
// 2-3 of those words. A rule of topic t draws 20 keywords from topic t (70%
// words, 30% phrases). A 5 KB document is about two topics: 40% of its
// tokens are function words, 40% general words no rule uses (Zipf over
// 20,000), 20% words of its two topics, plus a phrase of its topics every
// 40 tokens or so, with punctuation and capitals. Documents therefore hit a
// few dozen rules each, not all of them.

const (
	benchTopics          = 50
	benchWordsPerTopic   = 200
	benchPhrasesPerTopic = 1200
	benchFunctionWords   = 300
	benchGeneralWords    = 20000
	benchKeywords        = 20
	benchDocBytes        = 5 << 10
	benchDocs            = 200
	benchBudget          = time.Second     // per fast matcher
	benchNaiveBudget     = 4 * time.Second // the naive scan is capped by time
	benchNaiveMinDocs    = 3
)

type benchWorkload struct {
	rules          []Rule
	titles, bodies []string
	normalized     []string // Normalize(title) + separator + Normalize(body)
}

func benchWords(r *rand.Rand, count int) []string {
	onsets := strings.Fields("b c d f g h j k l m n p r s t v w z br ch cl dr fr gr pl pr sh st th tr")
	vowels := strings.Fields("a e i o u ai ea io ou")
	codas := []string{"", "", "", "n", "r", "s", "t", "l", "nd", "st"}
	seen := make(map[string]bool, count)
	words := make([]string, 0, count)
	for len(words) < count {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(onsets[r.IntN(len(onsets))])
			b.WriteString(vowels[r.IntN(len(vowels))])
		}
		b.WriteString(codas[r.IntN(len(codas))])
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

func newBenchWorkload(nRules int) *benchWorkload {
	r := rand.New(rand.NewPCG(2026, 11))
	all := benchWords(r, benchFunctionWords+benchTopics*benchWordsPerTopic+benchGeneralWords)
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	function := all[:benchFunctionWords]
	topical := all[benchFunctionWords : benchFunctionWords+benchTopics*benchWordsPerTopic]
	general := all[benchFunctionWords+benchTopics*benchWordsPerTopic:]
	topicWords := func(t int) []string { return topical[t*benchWordsPerTopic : (t+1)*benchWordsPerTopic] }
	phrases := make([][]string, benchTopics)
	for t := range phrases {
		tw := topicWords(t)
		phrases[t] = make([]string, benchPhrasesPerTopic)
		for i := range phrases[t] {
			ws := make([]string, 2+r.IntN(2))
			for j := range ws {
				ws[j] = tw[r.IntN(len(tw))]
			}
			phrases[t][i] = strings.Join(ws, " ")
		}
	}
	w := &benchWorkload{rules: make([]Rule, nRules)}
	for i := range w.rules {
		t := i % benchTopics
		kws := make([]string, benchKeywords)
		for j := range kws {
			if r.IntN(10) < 7 {
				kws[j] = topicWords(t)[r.IntN(benchWordsPerTopic)]
			} else {
				kws[j] = phrases[t][r.IntN(benchPhrasesPerTopic)]
			}
		}
		w.rules[i] = Rule{ID: int64(i + 1), Name: fmt.Sprint("rule ", i), Topic: fmt.Sprint("topic_", t),
			Keywords: kws, MinConfidence: 0.2, Priority: i % 10, Enabled: true}
	}
	zipfFunction := rand.NewZipf(r, 1.2, 2, uint64(len(function)-1))
	zipfGeneral := rand.NewZipf(r, 1.1, 2, uint64(len(general)-1))
	seps := []string{" ", " ", " ", " ", " ", " ", " ", ", ", ". ", " - ", "'s "}
	for range benchDocs {
		topics := [2]int{r.IntN(benchTopics), r.IntN(benchTopics)}
		var b strings.Builder
		capital := true
		for b.Len() < benchDocBytes {
			var word string
			switch p := r.IntN(100); {
			case p < 40:
				word = function[zipfFunction.Uint64()]
			case p < 80:
				word = general[zipfGeneral.Uint64()]
			case p < 97:
				word = topicWords(topics[r.IntN(2)])[r.IntN(benchWordsPerTopic)]
			default:
				word = phrases[topics[r.IntN(2)]][r.IntN(benchPhrasesPerTopic)]
			}
			if capital {
				word = strings.ToUpper(word[:1]) + word[1:]
			}
			b.WriteString(word)
			sep := seps[r.IntN(len(seps))]
			capital = sep == ". "
			b.WriteString(sep)
		}
		body := b.String()
		title := body[:strings.LastIndexByte(body[:80], ' ')]
		w.titles = append(w.titles, title)
		w.bodies = append(w.bodies, body)
		w.normalized = append(w.normalized, Normalize(title)+" "+fieldSeparator+" "+Normalize(body))
	}
	return w
}

var benchSink int

// runDocs calls match on documents in turn until budget has passed (and at
// least minDocs and one full pass for fast matchers), returning ns per
// document and bytes per second.
func runDocs(w *benchWorkload, budget time.Duration, minDocs int, match func(i int) int) (nsPerDoc, bytesPerSec float64, docs int) {
	var bytes int
	start := time.Now()
	for i := 0; ; i++ {
		d := i % len(w.bodies)
		benchSink += match(d)
		bytes += len(w.titles[d]) + len(w.bodies[d])
		docs++
		if el := time.Since(start); docs >= minDocs && el >= budget {
			break
		}
	}
	el := time.Since(start)
	return float64(el.Nanoseconds()) / float64(docs), float64(bytes) / el.Seconds(), docs
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMatch compares the engine with each matcher at 100, 1,000 and
// 5,000 rules x 20 keywords over 5 KB documents. The naive scan runs first
// in each size so that the others can report their speed-up over it.
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		w := newBenchWorkload(n)
		nsPerDoc := map[MatcherKind]float64{}
		for _, kind := range []MatcherKind{MatcherNaive, MatcherAhoCorasick, MatcherTokenIndex} {
			b.Run(fmt.Sprintf("%s/rules=%d", kind, n), func(b *testing.B) {
				for range b.N {
					before := heapAlloc()
					start := time.Now()
					e, err := NewEngine(kind, w.rules)
					build := time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					retained := float64(heapAlloc()) - float64(before)

					budget, minDocs := benchBudget, benchDocs
					if kind == MatcherNaive {
						budget, minDocs = benchNaiveBudget, benchNaiveMinDocs
					}
					e.Match(w.titles[0], w.bodies[0]) // warm the pools
					ns, bps, docs := runDocs(w, budget, minDocs, func(i int) int {
						return len(e.Match(w.titles[i], w.bodies[i]))
					})
					m := e.snap.Load().matcher
					matcherNs, _, _ := runDocs(w, budget/4, min(minDocs, 10), func(i int) int {
						return len(m.Match(w.normalized[i]))
					})
					nsPerDoc[kind] = ns
					var found, matched int
					for i := range 10 {
						found += len(m.Match(w.normalized[i]))
						matched += len(e.Match(w.titles[i], w.bodies[i]))
					}

					b.ReportMetric(ns, "ns/doc")
					b.ReportMetric(bps/1e6, "MB/s")
					b.ReportMetric(matcherNs, "matcher_ns/doc")
					b.ReportMetric(float64(build.Microseconds())/1e3, "build_ms")
					b.ReportMetric(retained/(1<<20), "heap_MB")
					b.ReportMetric(float64(docs), "docs")
					b.ReportMetric(float64(found)/10, "keywords_found/doc")
					b.ReportMetric(float64(matched)/10, "matches/doc")
					b.ReportMetric(float64(e.KeywordCount()), "distinct_keywords")
					if naive, ok := nsPerDoc[MatcherNaive]; ok && kind != MatcherNaive {
						b.ReportMetric(naive/ns, "x_faster_than_naive")
					}
					if ac, ok := nsPerDoc[MatcherAhoCorasick]; ok && kind == MatcherTokenIndex {
						b.ReportMetric(ac/ns, "x_faster_than_aho_corasick")
					}
					runtime.KeepAlive(e)
				}
			})
		}
	}
}

// BenchmarkMatchStemming is the engine with stemming off and on (Options.
// Stemming), for the Aho-Corasick and token-index matchers at 1,000 rules x
// 20 keywords over the same 5 KB documents. With stemming on, Engine.Match
// also stems every token of the text (memoized by Stem, so the figures are
// the steady state once a vocabulary has been seen); build_ms includes
// stemming the keywords. ns/doc is the best of three runs in wall time,
// cpu_ns/doc in the CPU time of the matching thread (steadier on a shared
// machine); x_cpu_of_unstemmed is the cpu_ns/doc ratio of stemming on to off.
func BenchmarkMatchStemming(b *testing.B) {
	const n = 1000
	w := newBenchWorkload(n)
	for _, kind := range []MatcherKind{MatcherAhoCorasick, MatcherTokenIndex} {
		var flat float64
		for _, stem := range []bool{false, true} {
			name := map[bool]string{false: "off", true: "on"}[stem]
			b.Run(fmt.Sprintf("stemming=%s/%s/rules=%d", name, kind, n), func(b *testing.B) {
				for range b.N {
					before := heapAlloc()
					start := time.Now()
					e, err := NewEngineWithOptions(Options{Matcher: kind, Stemming: stem}, w.rules)
					build := time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					retained := float64(heapAlloc()) - float64(before)
					for i := range w.titles { // warm the pools and the stem memo
						e.Match(w.titles[i], w.bodies[i])
					}
					// The best of three runs, in wall time and in the CPU time of
					// the thread that ran them: on a shared machine a slow run
					// measures the neighbours, and thread CPU time leaves out the
					// time spent waiting for a core.
					ns, bps, docs, cpu := math.Inf(1), 0.0, 0, math.Inf(1)
					runtime.LockOSThread()
					for range 3 {
						c0 := threadCPU()
						n, b, d := runDocs(w, benchBudget/3, benchDocs/3, func(i int) int {
							return len(e.Match(w.titles[i], w.bodies[i]))
						})
						if c := float64(threadCPU()-c0) / float64(d); c < cpu {
							cpu = c
						}
						if n < ns {
							ns, bps = n, b
						}
						docs += d
					}
					runtime.UnlockOSThread()
					var matched int
					for i := range 10 {
						matched += len(e.Match(w.titles[i], w.bodies[i]))
					}
					b.ReportMetric(ns, "ns/doc")
					b.ReportMetric(cpu, "cpu_ns/doc")
					b.ReportMetric(bps/1e6, "MB/s")
					b.ReportMetric(float64(build.Microseconds())/1e3, "build_ms")
					b.ReportMetric(retained/(1<<20), "heap_MB")
					b.ReportMetric(float64(docs), "docs")
					b.ReportMetric(float64(matched)/10, "matches/doc")
					b.ReportMetric(float64(e.KeywordCount()), "distinct_keywords")
					if stem {
						b.ReportMetric(cpu/flat, "x_cpu_of_unstemmed")
					} else {
						flat = cpu
					}
					runtime.KeepAlive(e)
				}
			})
		}
	}
}

// BenchmarkReload is a hot reload (Engine.Update) of the default engine at
// 1,000 and 5,000 rules x 20 keywords: steady_heap_MB is the heap the engine
// retains, reload_peak_MB the most heap in use during Update (sampled every
// 100 µs with the collector running at GOGC=10, so garbage counts for at
// most about a tenth of the live heap), x_of_steady their ratio (the
// issue's ceiling is 2; two full engines alive at once would be 2 or more).
func BenchmarkReload(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		w := newBenchWorkload(n)
		b.Run(fmt.Sprintf("%s/rules=%d", MatcherKindDefault, n), func(b *testing.B) {
			for range b.N {
				base := heapAlloc()
				e, err := NewEngineWithOptions(DefaultOptions(), w.rules)
				if err != nil {
					b.Fatal(err)
				}
				steady := float64(heapAlloc()) - float64(base)
				// The same rules with one keyword more, as a reload of edited rules.
				rules := slices.Clone(w.rules)
				rules[0].Keywords = append(slices.Clone(rules[0].Keywords), "reloaded keyword")
				runtime.GC()
				old := debug.SetGCPercent(10)
				stop, peakc := make(chan struct{}), make(chan uint64)
				go func() {
					sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
					var peak uint64
					for {
						metrics.Read(sample)
						peak = max(peak, sample[0].Value.Uint64())
						select {
						case <-stop:
							peakc <- peak
							return
						case <-time.After(100 * time.Microsecond):
						}
					}
				}()
				start := time.Now()
				if err := e.Update(rules); err != nil {
					b.Fatal(err)
				}
				reload := time.Since(start)
				close(stop)
				peak := float64(<-peakc) - float64(base)
				debug.SetGCPercent(old)
				after := float64(heapAlloc()) - float64(base)
				b.ReportMetric(steady/(1<<20), "steady_heap_MB")
				b.ReportMetric(peak/(1<<20), "reload_peak_MB")
				b.ReportMetric(peak/steady, "x_of_steady")
				b.ReportMetric(after/(1<<20), "after_reload_heap_MB")
				b.ReportMetric(float64(reload.Microseconds())/1e3, "reload_ms")
				runtime.KeepAlive(e)
			}
		})
	}
}

// threadCPU is the CPU time the calling OS thread has used (user and
// system), in nanoseconds: getrusage(RUSAGE_THREAD). The caller locks the
// goroutine to its thread.
func threadCPU() int64 {
	const rusageThread = 1 // RUSAGE_THREAD, Linux
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
