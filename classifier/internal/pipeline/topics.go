package pipeline

import (
	"sort"
	"strings"
	"unicode"
)

// Crime subcategory topics: a match sets is_crime_related and
// crime_subcategory.
var crimeSubcategories = map[string]bool{
	"violent_crime": true, "property_crime": true, "drug_crime": true,
	"organized_crime": true, "criminal_justice": true,
}

// IsCrimeSubcategory reports whether topic is one of the crime subcategories.
func IsCrimeSubcategory(topic string) bool { return crimeSubcategories[topic] }

// TopicRule is a topic and the whole words or phrases that indicate it.
type TopicRule struct {
	Topic    string
	Priority int
	Keywords []string
}

// StarterTopics is the first, built-in rule set of the walking skeleton.
func StarterTopics() []TopicRule {
	return []TopicRule{
		{Topic: "violent_crime", Priority: 10, Keywords: []string{"murder", "shooting", "stabbing", "assault", "homicide", "shot dead"}},
		{Topic: "property_crime", Priority: 9, Keywords: []string{"burglary", "theft", "stolen", "break-in", "vandalism"}},
		{Topic: "drug_crime", Priority: 9, Keywords: []string{"drug trafficking", "fentanyl", "cocaine", "narcotics"}},
		{Topic: "politics", Priority: 5, Keywords: []string{"election", "council", "mayor", "parliament", "minister"}},
		{Topic: "sports", Priority: 3, Keywords: []string{"hockey", "soccer", "playoffs", "tournament", "coach"}},
		{Topic: "weather", Priority: 3, Keywords: []string{"snowfall", "storm", "forecast", "heat warning"}},
	}
}

// TopicMatch is a matched topic with the fraction of its keywords found.
type TopicMatch struct {
	Topic    string
	Priority int
	Score    float64
}

// TopicMatcher matches whole words and phrases of normalized text.
type TopicMatcher struct {
	rules []TopicRule
}

// NewTopicMatcher normalizes the keywords of rules once.
func NewTopicMatcher(rules []TopicRule) *TopicMatcher {
	out := make([]TopicRule, len(rules))
	for i, r := range rules {
		kws := make([]string, 0, len(r.Keywords))
		for _, k := range r.Keywords {
			if n := normalize(k); n != "" {
				kws = append(kws, n)
			}
		}
		out[i] = TopicRule{Topic: r.Topic, Priority: r.Priority, Keywords: kws}
	}
	return &TopicMatcher{rules: out}
}

// Match returns matched topics, highest priority then score first.
func (m *TopicMatcher) Match(text string) []TopicMatch {
	padded := " " + normalize(text) + " "
	var out []TopicMatch
	for _, r := range m.rules {
		found := 0
		for _, k := range r.Keywords {
			if strings.Contains(padded, " "+k+" ") {
				found++
			}
		}
		if found > 0 {
			out = append(out, TopicMatch{Topic: r.Topic, Priority: r.Priority, Score: float64(found) / float64(len(r.Keywords))})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority > out[j].Priority
		}
		return out[i].Score > out[j].Score
	})
	return out
}

// normalize lowercases s and turns every run of non-letters and non-digits
// into one space, so keywords match on word boundaries only.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := true
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}
