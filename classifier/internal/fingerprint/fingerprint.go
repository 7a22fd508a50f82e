// Package fingerprint tells when two articles carry the same text: wire
// copy republished by several outlets, or a page crawled again after a
// small edit.
//
// Two fingerprints are computed from the normalized title and body
// (lower case, letters and digits only, one space between words):
//   - Exact: a SHA-256 of that text. Equal hashes mean the same words.
//   - Sim: a 64-bit SimHash (Charikar) over overlapping three-word
//     shingles, as search engines use for near-duplicate web pages. Texts
//     that differ in a sentence differ in a few bits; unrelated texts in
//     about 32. Near means at most NearBits bits apart.
//   - Sketch: the SketchSize smallest shingle hashes (a bottom-k MinHash
//     sketch, Broder's estimate of how many shingles two texts share).
//     Texts that share most shingles share most of their sketch and
//     unrelated texts almost never share a value, so a store finds a
//     text's candidates with one indexed overlap lookup (a GIN index on an
//     array). (SimHash's own band trick finds only candidates at most three
//     bits apart; a changed sentence in a 300-word article moves 1 to 11.)
//
// Near holds when the exact hashes are equal, or when Sim is at most
// NearBits bits apart, or when the sketches estimate that at least
// MinResemblance of the two texts' shingles are shared. The sketch catches
// what SimHash misses in short texts, where one changed sentence is a
// tenth of the shingles and moves more bits (13 in a 180-word article).
//
// NearBits rests on measurements: 38 news texts of about 300 words, each
// with one sentence replaced, were at most 9 bits from their originals,
// and no two different texts were closer than 20
// (TestNearBitsSeparatesEditsFromOtherTexts). On licence texts cut into
// 150-, 300- and 600-word pieces the edited copies were 0 to 16 bits away
// (median 9, 6 and 4) and different pieces 13 bits or more, so very short
// or repetitive texts are where a changed sentence can be missed.
package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"math/bits"
	"slices"
	"unicode"
	"unicode/utf8"
)

// NearBits is the largest Hamming distance between two Sim values that
// still counts as the same text.
const NearBits = 10

// SketchSize is the number of shingle hashes in a Sketch.
const SketchSize = 8

// MinResemblance is the smallest share of common shingles, as the sketches
// estimate it, for which two texts count as the same.
const MinResemblance = 0.5

// MinWords is the fewest words for which Sim and Sketch are computed:
// with fewer, one changed word moves too many bits, and short texts (a
// headline alone) are compared only exactly.
const MinWords = 50

// Fingerprint is the pair of an article's fingerprints.
type Fingerprint struct {
	// Exact is the hex SHA-256 of the normalized text.
	Exact string
	// Sim is the SimHash; zero when the text has fewer than MinWords words.
	Sim uint64
	// Sketch holds the smallest shingle hashes, ascending, as int64 (the
	// same bits) for a Postgres BIGINT[]; empty below MinWords words.
	Sketch []int64
	// Words is the number of words of the normalized text.
	Words int
}

// HasSim reports whether Sim may be compared.
func (f Fingerprint) HasSim() bool { return f.Words >= MinWords }

// Of computes the fingerprints of an article's title and body.
func Of(title, body string) Fingerprint {
	text, words := normalize(title, body)
	sum := sha256.Sum256([]byte(text))
	f := Fingerprint{Exact: hex.EncodeToString(sum[:]), Words: len(words)}
	if f.HasSim() {
		f.Sim, f.Sketch = shingles(words)
	}
	return f
}

// Distance is the number of bits in which a and b differ.
func Distance(a, b uint64) int { return bits.OnesCount64(a ^ b) }

// Near reports whether two fingerprints carry nearly the same text.
func Near(a, b Fingerprint) bool {
	if a.Exact == b.Exact {
		return true
	}
	if !a.HasSim() || !b.HasSim() {
		return false
	}
	return Distance(a.Sim, b.Sim) <= NearBits || Resemblance(a.Sketch, b.Sketch) >= MinResemblance
}

// Resemblance estimates the share of shingles two texts have in common
// from their sketches: of the SketchSize smallest values of both sketches
// together, the fraction that is in both.
func Resemblance(a, b []int64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	union := make([]uint64, 0, len(a)+len(b))
	for _, v := range a {
		union = append(union, uint64(v))
	}
	for _, v := range b {
		union = append(union, uint64(v))
	}
	slices.Sort(union)
	union = slices.Compact(union)
	if len(union) > SketchSize {
		union = union[:SketchSize]
	}
	both := 0
	for _, v := range union {
		if slices.Contains(a, int64(v)) && slices.Contains(b, int64(v)) {
			both++
		}
	}
	return float64(both) / float64(len(union))
}

// normalize returns the words of the texts, lower-cased, letters and
// digits only, and the text they make joined by single spaces. The words
// are slices of that text: one allocation for all of them.
func normalize(texts ...string) (string, []string) {
	n := 0
	for _, s := range texts {
		n += len(s) + 1
	}
	buf := make([]byte, 0, n)
	var bounds []int // start and end of each word in buf
	inWord := false
	for _, s := range texts {
		for _, r := range s {
			lower, ok := wordRune(r)
			switch {
			case !ok && inWord:
				bounds, inWord = append(bounds, len(buf)), false
			case !ok:
			default:
				if !inWord {
					if len(buf) > 0 {
						buf = append(buf, ' ')
					}
					bounds, inWord = append(bounds, len(buf)), true
				}
				buf = utf8.AppendRune(buf, lower)
			}
		}
		if inWord {
			bounds, inWord = append(bounds, len(buf)), false
		}
	}
	text := string(buf)
	words := make([]string, len(bounds)/2)
	for i := range words {
		words[i] = text[bounds[2*i]:bounds[2*i+1]]
	}
	return text, words
}

// wordRune reports whether r belongs to a word (a letter or a digit) and
// returns it lower-cased; ASCII without the Unicode tables.
func wordRune(r rune) (rune, bool) {
	switch {
	case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
		return r, true
	case 'A' <= r && r <= 'Z':
		return r + 'a' - 'A', true
	case r < utf8.RuneSelf:
		return r, false
	}
	return unicode.ToLower(r), unicode.IsLetter(r) || unicode.IsDigit(r)
}

// shingles hashes every three-word shingle once. Sim sums, for each of 64
// bit positions, +1 or -1 per shingle by the hash's bit there and keeps
// the positions whose sum is positive; the sketch keeps the smallest
// distinct hashes.
func shingles(words []string) (uint64, []int64) {
	const shingle = 3
	var ones bitCounts
	sketch := make([]uint64, 0, SketchSize+1)
	n := max(len(words)-shingle+1, 0) // shingles
	for i := range n {
		v := mix(fnv64a(words[i : i+shingle]))
		sketch = keepSmallest(sketch, v)
		ones.add(v)
	}
	var sim uint64
	for b := range 64 {
		if 2*ones.count(b) > n { // more shingles with the bit set than without
			sim |= 1 << b
		}
	}
	out := make([]int64, len(sketch))
	for i, v := range sketch {
		out[i] = int64(v)
	}
	return sim, out
}

// bitCounts counts, for each of 64 bit positions, the words added with
// that bit set: 64 counters held bit-sliced (plane i holds bit i of every
// counter), so adding a word is a ripple of carries, two steps on average,
// instead of 64 increments.
type bitCounts struct{ planes [32]uint64 }

func (c *bitCounts) add(v uint64) {
	for i := 0; v != 0; i++ {
		carry := c.planes[i] & v
		c.planes[i] ^= v
		v = carry
	}
}

func (c *bitCounts) count(bit int) int {
	n := 0
	for i, p := range c.planes {
		n |= int(p>>bit&1) << i
	}
	return n
}

// FNV-1a, 64 bits (hash/fnv's New64a), inline: no allocation per shingle.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// fnv64a hashes words joined by single spaces.
func fnv64a(words []string) uint64 {
	h := uint64(fnvOffset64)
	for j, w := range words {
		if j > 0 {
			h = (h ^ ' ') * fnvPrime64
		}
		for k := 0; k < len(w); k++ {
			h = (h ^ uint64(w[k])) * fnvPrime64
		}
	}
	return h
}

// keepSmallest inserts v into the ascending, distinct sketch and keeps at
// most SketchSize values.
func keepSmallest(sketch []uint64, v uint64) []uint64 {
	i, found := slices.BinarySearch(sketch, v)
	if found || i >= SketchSize {
		return sketch
	}
	sketch = slices.Insert(sketch, i, v)
	if len(sketch) > SketchSize {
		sketch = sketch[:SketchSize]
	}
	return sketch
}

// mix is SplitMix64's finalizer: FNV's output bits are not independent
// enough for SimHash, whose bits must each be a fair coin per shingle.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
