package pipeline

import (
	"math"
	"strings"

	"github.com/north-cloud/classifier/internal/domain"
)

// scoreQuality returns a 0-100 score and its factors: length tiers, metadata
// completeness, richness (distinct words) and readability (sentence and word
// length close to news prose).
func scoreQuality(words int, title, description string, hasDate bool, text string) (int, domain.QualityFactors) {
	var f domain.QualityFactors
	switch {
	case words >= 800:
		f.WordCount = 1
	case words >= 400:
		f.WordCount = 0.8
	case words >= 200:
		f.WordCount = 0.6
	case words >= 100:
		f.WordCount = 0.4
	case words > 0:
		f.WordCount = 0.15
	}
	for _, present := range []bool{strings.TrimSpace(title) != "", strings.TrimSpace(description) != "", hasDate} {
		if present {
			f.Metadata += 1.0 / 3
		}
	}
	tokens := strings.Fields(strings.ToLower(text))
	if len(tokens) > 0 {
		distinct := make(map[string]struct{}, len(tokens))
		letters := 0
		for _, tok := range tokens {
			distinct[tok] = struct{}{}
			letters += len(tok)
		}
		// Type-token ratio saturates on long texts; scale by sqrt of length.
		f.Richness = math.Min(1, float64(len(distinct))/math.Sqrt(float64(len(tokens)))/8)
		sentences := max(1, strings.Count(text, ".")+strings.Count(text, "!")+strings.Count(text, "?"))
		wordsPerSentence := float64(len(tokens)) / float64(sentences)
		charsPerWord := float64(letters) / float64(len(tokens))
		// News prose: about 15-25 words per sentence, 4-6 characters a word.
		f.Readability = closeness(wordsPerSentence, 20, 15) * closeness(charsPerWord, 5, 3)
	}
	score := 100 * (0.35*f.WordCount + 0.25*f.Metadata + 0.2*f.Richness + 0.2*f.Readability)
	return int(math.Round(math.Min(100, math.Max(0, score)))), f
}

// closeness is 1 at target and falls linearly to 0 at target±spread.
func closeness(v, target, spread float64) float64 {
	return math.Max(0, 1-math.Abs(v-target)/spread)
}
