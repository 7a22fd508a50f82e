package loadgen

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/north-cloud/infrastructure/contentindex"
)

// CrawlerConfig shapes the documents of a Crawler. The zero value takes
// every default.
type CrawlerConfig struct {
	// TextMinBytes and TextMaxBytes bound the length of raw_text, drawn
	// uniformly between them. Default to TextMinBytesDefault and
	// TextMaxBytesDefault.
	TextMinBytes, TextMaxBytes int
	// HTMLMinBytes and HTMLMaxBytes bound the length of raw_html (the page
	// the text was extracted from), drawn uniformly between them. Default
	// to HTMLMinBytesDefault and HTMLMaxBytesDefault; equal values give
	// pages of one size.
	HTMLMinBytes, HTMLMaxBytes int
	// DuplicateRate is the share of documents that copy the text of an
	// earlier one under another URL, as syndicated stories do: half of them
	// exactly, half with a sentence added (a near copy). Between 0 and
	// 0.5; zero writes no copies (the loader's flag defaults to
	// DuplicateRateDefault).
	DuplicateRate float64
	// VocabularySize is the number of distinct words texts are drawn from
	// (Zipf-distributed, as words of a language are). Defaults to
	// VocabularySizeDefault.
	VocabularySize int
}

// Defaults of CrawlerConfig.
const (
	TextMinBytesDefault   = 2 << 10
	TextMaxBytesDefault   = 8 << 10
	HTMLMinBytesDefault   = 20 << 10
	HTMLMaxBytesDefault   = 200 << 10
	DuplicateRateDefault  = 0.03
	VocabularySizeDefault = 20_000
)

// recentTexts bounds the texts a copy is taken from: the last ones
// generated, as a syndicated story follows its original within hours.
const recentTexts = 1000

// templateBytes is the size of the markup pool pages are cut from: pages of
// one site share their template, not their bytes end to end.
const templateBytes = 256 << 10

func (c *CrawlerConfig) setDefaults() {
	if c.TextMinBytes == 0 {
		c.TextMinBytes = TextMinBytesDefault
	}
	if c.TextMaxBytes == 0 {
		c.TextMaxBytes = max(TextMaxBytesDefault, c.TextMinBytes)
	}
	if c.HTMLMinBytes == 0 {
		c.HTMLMinBytes = HTMLMinBytesDefault
	}
	if c.HTMLMaxBytes == 0 {
		c.HTMLMaxBytes = max(HTMLMaxBytesDefault, c.HTMLMinBytes)
	}
	if c.VocabularySize == 0 {
		c.VocabularySize = VocabularySizeDefault
	}
}

func (c *CrawlerConfig) validate() error {
	switch {
	case c.TextMinBytes < 200 || c.TextMaxBytes < c.TextMinBytes:
		return fmt.Errorf("crawler config: TextMinBytes %d must be >= 200 and <= TextMaxBytes %d", c.TextMinBytes, c.TextMaxBytes)
	case c.HTMLMinBytes < 0 || c.HTMLMaxBytes < c.HTMLMinBytes:
		return fmt.Errorf("crawler config: HTMLMinBytes %d must be >= 0 and <= HTMLMaxBytes %d", c.HTMLMinBytes, c.HTMLMaxBytes)
	case c.DuplicateRate < 0 || c.DuplicateRate > 0.5:
		return fmt.Errorf("crawler config: DuplicateRate %g must be between 0 and 0.5", c.DuplicateRate)
	case c.VocabularySize < 1000:
		return fmt.Errorf("crawler config: VocabularySize %d must be >= 1000", c.VocabularySize)
	}
	return nil
}

// CopyKind says whether a crawled document copies an earlier one's text.
type CopyKind string

// The copy kinds a Crawler writes.
const (
	Original  CopyKind = ""
	ExactCopy CopyKind = "exact"
	NearCopy  CopyKind = "near"
)

// Crawler makes documents shaped like a crawler's: texts of real length
// from a wide Zipf-distributed vocabulary, the HTML page each came from,
// and a stated share of syndicated copies. The same seed and config give
// the same corpus.
type Crawler struct {
	cfg      CrawlerConfig
	meta     *Generator // kinds, titles, URLs and dates, as the simple corpus
	rng      *rand.Rand
	zipf     *rand.Zipf
	vocab    []string
	template string
	recent   []string // ring of the last texts, for copies
	next     int
	copies   map[CopyKind]int
}

// NewCrawler returns a Crawler after applying cfg's defaults.
func NewCrawler(seed uint64, cfg CrawlerConfig) (*Crawler, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed^0x5bd1e995, seed))
	c := &Crawler{
		cfg:    cfg,
		meta:   NewGenerator(seed),
		rng:    rng,
		vocab:  vocabulary(rng, cfg.VocabularySize),
		copies: map[CopyKind]int{},
	}
	// s = 1.1: close to the frequency of words in English text.
	c.zipf = rand.NewZipf(rng, 1.1, 2, uint64(len(c.vocab)-1))
	c.template = markup(rng, c.vocab, templateBytes)
	return c, nil
}

// Copies returns how many documents so far were copies of each kind.
func (c *Crawler) Copies() map[CopyKind]int {
	out := make(map[CopyKind]int, len(c.copies))
	for k, v := range c.copies {
		out[k] = v
	}
	return out
}

// Document returns the n-th document of source and whether its text copies
// an earlier document's.
func (c *Crawler) Document(source string, n int) (contentindex.RawDocument, CopyKind) {
	doc := c.meta.Document(source, n)
	if doc.OGType == "website" {
		// A listing page of the simple corpus reuses one of 20 URLs (a URL
		// duplicate); here every page has its own, so the copies are the
		// stated DuplicateRate and nothing else.
		doc.URL = fmt.Sprintf("https://%s.example.com/category/local/page/%d", source, 1+n)
	}
	kind := Original
	if len(c.recent) > 0 && c.rng.Float64() < c.cfg.DuplicateRate {
		text := c.recent[c.rng.IntN(len(c.recent))]
		kind = ExactCopy
		if c.rng.IntN(2) == 0 {
			kind = NearCopy
			text += " " + c.sentence(8)
		}
		doc.RawText = text
		c.copies[kind]++
	} else {
		doc.RawText = c.text(doc.MetaDescription)
		c.remember(doc.RawText)
	}
	doc.WordCount = len(strings.Fields(doc.RawText))
	doc.RawHTML = c.page(doc.Title, doc.RawText)
	return doc, kind
}

func (c *Crawler) remember(text string) {
	if len(c.recent) < recentTexts {
		c.recent = append(c.recent, text)
		return
	}
	c.recent[c.next] = text
	c.next = (c.next + 1) % recentTexts
}

// text writes sentences after the lead until the drawn length is reached.
func (c *Crawler) text(lead string) string {
	target := c.cfg.TextMinBytes + c.rng.IntN(c.cfg.TextMaxBytes-c.cfg.TextMinBytes+1)
	var b strings.Builder
	b.Grow(target + 200)
	b.WriteString(lead)
	for b.Len() < target {
		b.WriteByte(' ')
		b.WriteString(c.sentence(6 + c.rng.IntN(20)))
	}
	return b.String()
}

func (c *Crawler) sentence(words int) string {
	var b strings.Builder
	for i := range words {
		w := c.vocab[c.zipf.Uint64()]
		if i == 0 {
			b.WriteString(strings.ToUpper(w[:1]))
			b.WriteString(w[1:])
			continue
		}
		b.WriteByte(' ')
		b.WriteString(w)
		if i < words-1 && c.rng.IntN(12) == 0 {
			b.WriteByte(',')
		}
	}
	b.WriteByte('.')
	return b.String()
}

// page wraps the text in a page of the drawn size: a head and scripts cut
// from the site's template around the article's paragraphs.
func (c *Crawler) page(title, text string) string {
	target := c.cfg.HTMLMinBytes + c.rng.IntN(c.cfg.HTMLMaxBytes-c.cfg.HTMLMinBytes+1)
	var b strings.Builder
	b.Grow(target + len(text) + 256)
	b.WriteString("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
	b.WriteString(title)
	b.WriteString("</title></head><body><article><h1>")
	b.WriteString(title)
	b.WriteString("</h1><p>")
	b.WriteString(strings.ReplaceAll(text, ". ", ".</p><p>"))
	b.WriteString("</p></article>")
	const tail = "</body></html>"
	for pad := target - b.Len() - len(tail); pad > 0; {
		off := c.rng.IntN(len(c.template))
		chunk := c.template[off:min(len(c.template), off+pad)]
		b.WriteString(chunk)
		pad -= len(chunk)
	}
	b.WriteString(tail)
	return b.String()
}

// common are the most frequent English words, the head of the vocabulary.
var common = strings.Fields(`the of and to a in is that for it as was with be by on not he this
are or his from at which but have an they you were her she there been one all we their has
would when if so no will more said its also after two than other into some could new them
these about over may only most time people year police city council report officials week`)

var syllables = strings.Fields(`ba be bi bo bu da de di do du fa fe fi fo ga ge go ka ke ki ko ku
la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po ra re ri ro ru sa se si so su ta te ti
to tu va ve vi vo za ze zo an en in on ar er or al el il str tr pl gr br`)

// vocabulary returns n distinct words: common English words first (the
// Zipf head), then made-up words of two to four syllables.
func vocabulary(rng *rand.Rand, n int) []string {
	words := make([]string, 0, n)
	seen := make(map[string]bool, n)
	for _, w := range common {
		if len(words) < n && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	for len(words) < n {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

// markup returns size bytes of a site's template: navigation, inline
// styles and scripts with tracking data, as crawled pages carry.
func markup(rng *rand.Rand, vocab []string, size int) string {
	var b strings.Builder
	b.Grow(size + 512)
	for i := 0; b.Len() < size; i++ {
		w := vocab[rng.IntN(len(vocab))]
		switch rng.IntN(4) {
		case 0:
			fmt.Fprintf(&b, `<li class="nav-item n%d"><a href="/section/%s/%d">%s</a></li>`, i%97, w, rng.IntN(10000), w)
		case 1:
			fmt.Fprintf(&b, `<div class="ad-slot" data-slot="%x" data-size="%dx%d"></div>`, rng.Uint32(), 300+rng.IntN(500), 50+rng.IntN(600))
		case 2:
			fmt.Fprintf(&b, `<script>window.__d%d={"k":"%s","v":%d,"t":"%x"};</script>`, i, w, rng.IntN(1e6), rng.Uint64())
		default:
			fmt.Fprintf(&b, `<style>.c-%s-%d{margin:%dpx;color:#%06x}</style>`, w, i, rng.IntN(40), rng.IntN(1<<24))
		}
	}
	return b.String()
}
