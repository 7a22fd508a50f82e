package rules

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kljensen/snowball/english"
)

// Stem returns the English Snowball (Porter2) stem of one token of
// Normalize's output: "acquires", "acquired" and "acquiring" all give
// "acquir", "prices" gives "price". Tokens of one or two characters and
// English stop words are returned unchanged. The stemmer is
// github.com/kljensen/snowball/english.
func Stem(token string) string {
	if len(token) <= 2 {
		return token
	}
	sh := &stemCache[shardOf(token)]
	sh.mu.RLock()
	s, ok := sh.m[token]
	sh.mu.RUnlock()
	if ok {
		return s
	}
	s = english.Stem(token, false)
	if s == "" {
		s = token
	}
	if stemCacheSize.Load() < stemCacheMax {
		sh.mu.Lock()
		if _, ok := sh.m[token]; !ok {
			if sh.m == nil {
				sh.m = make(map[string]string)
			}
			sh.m[strings.Clone(token)] = s
			stemCacheSize.Add(1)
		}
		sh.mu.Unlock()
	}
	return s
}

// StemText stems every token of normalized text (tokens separated by single
// spaces, as Normalize returns them, optionally joined by the engine's field
// separator). Token boundaries do not move, so whole-word semantics hold on
// the result exactly as on the input.
func StemText(normalized string) string {
	if normalized == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(normalized))
	for pos := 0; pos <= len(normalized); {
		end := strings.IndexByte(normalized[pos:], ' ')
		if end < 0 {
			end = len(normalized)
		} else {
			end += pos
		}
		if pos > 0 {
			b.WriteByte(' ')
		}
		if tok := normalized[pos:end]; tok == fieldSeparator {
			b.WriteString(tok)
		} else {
			b.WriteString(Stem(tok))
		}
		pos = end + 1
	}
	return b.String()
}

// stemCacheMax bounds the memo of Stem: news vocabulary is Zipfian, so the
// first hundred thousand distinct tokens answer nearly every later lookup,
// and the memo cannot grow without bound on adversarial text (tokens past
// the bound are stemmed each time).
const stemCacheMax = 100_000

// stemCache is the memo of Stem, sharded so that workers stemming at once
// rarely share a lock.
var (
	stemCache     [64]stemShard
	stemCacheSize atomic.Int64
)

type stemShard struct {
	mu sync.RWMutex
	m  map[string]string // token -> stem
}

// shardOf is FNV-1a of token, reduced to a shard index.
func shardOf(token string) int {
	h := uint32(2166136261)
	for i := 0; i < len(token); i++ {
		h ^= uint32(token[i])
		h *= 16777619
	}
	return int(h % uint32(len(stemCache)))
}
