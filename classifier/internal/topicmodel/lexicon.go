package topicmodel

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/north-cloud/classifier/internal/rules"
)

// defaultLexicon is the shipped default model's source: written by hand,
// learned from no data set (docs/classification.md says how it was made).
//
//go:embed lexicon.txt
var defaultLexicon string

// crimeLexicon is the default model's [crime] section (CrimeTopic), kept in
// its own file: the words of crime reporting, written by hand.
//
//go:embed lexicon_crime.txt
var crimeLexicon string

// DefaultLexicon is the model the classifier uses when no trained model is
// active: the embedded lexicon.txt and lexicon_crime.txt, compiled.
func DefaultLexicon() (*Model, error) {
	return ParseLexicon(strings.NewReader(defaultLexicon + "\n" + crimeLexicon))
}

// Lexicon defaults, overridden by directives in the file.
const (
	// LexiconTitleDefault multiplies a keyword's weight when it is found in
	// the title.
	LexiconTitleDefault = 2.0
	// LexiconTemperatureDefault is the softmax temperature of a lexicon.
	LexiconTemperatureDefault = 1.0
)

// ParseLexicon compiles a hand-written lexicon into a Model. The format, one
// item a line, # starting a comment:
//
//	@title 2          a keyword found in the title weighs this many times more
//	@temperature 1    the softmax temperature
//	[sports]          the topic of the keywords below
//	3 olympics        a weight and a keyword (one or more words)
//	-2 film           a negative weight lowers the topic
//
// Keywords are keyed like the rule engine's (normalized, stemmed), so
// "olympics" also finds "olympic". A keyword listed under several topics
// weighs for each; listed twice under one topic, the weights add.
func ParseLexicon(r io.Reader) (*Model, error) {
	m := &Model{Kind: "lexicon", Stemming: true, Norm: NormNone, Temperature: LexiconTemperatureDefault}
	titleFactor := LexiconTitleDefault
	type entry struct {
		term  string
		topic int
		w     float64
	}
	var entries []entry
	topic := -1
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "@"):
			name, val, _ := strings.Cut(line[1:], " ")
			v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil || v <= 0 || math.IsInf(v, 0) {
				return nil, fmt.Errorf("lexicon line %d: @%s wants a positive number", n, name)
			}
			switch name {
			case "title":
				titleFactor = v
			case "temperature":
				m.Temperature = v
			default:
				return nil, fmt.Errorf("lexicon line %d: unknown directive @%s (want @title or @temperature)", n, name)
			}
		case strings.HasPrefix(line, "["):
			name, ok := strings.CutSuffix(line[1:], "]")
			name = strings.TrimSpace(name)
			if !ok || name == "" {
				return nil, fmt.Errorf("lexicon line %d: want [topic]", n)
			}
			topic = slices.Index(m.Topics, name)
			if topic < 0 {
				topic = len(m.Topics)
				m.Topics = append(m.Topics, name)
			}
		default:
			if topic < 0 {
				return nil, fmt.Errorf("lexicon line %d: a keyword before any [topic]", n)
			}
			ws, kw, _ := strings.Cut(line, " ")
			w, err := strconv.ParseFloat(ws, 64)
			if err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
				return nil, fmt.Errorf("lexicon line %d: want a weight and a keyword, got %q", n, line)
			}
			term := rules.StemText(rules.Normalize(kw))
			if term == "" {
				return nil, fmt.Errorf("lexicon line %d: keyword %q has no words", n, kw)
			}
			entries = append(entries, entry{term: term, topic: topic, w: w})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("lexicon: %w", err)
	}
	index := map[string]int{}
	for _, e := range entries {
		if _, ok := index[e.term]; !ok {
			index[e.term] = len(m.Terms)
			m.Terms = append(m.Terms, e.term)
		}
	}
	c := len(m.Topics)
	m.Body = make([]float32, len(m.Terms)*c)
	m.Title = make([]float32, len(m.Terms)*c)
	m.Bias = make([]float64, c)
	for _, e := range entries {
		i := index[e.term]*c + e.topic
		m.Body[i] += float32(e.w)
		m.Title[i] += float32(e.w * titleFactor)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}
