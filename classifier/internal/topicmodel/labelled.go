package topicmodel

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Labelled is one line of a labelled news file: {"id", "label", "title",
// "text"} ("body" is read as "text"). Label is a topic name, or the name of
// a section of the public news sets (World, Sports, Business, Sci/Tech,
// sport, tech, ...), which reads as its topic (LabelTopic).
type Labelled struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Title string `json:"title"`
	Text  string `json:"text"`
	Body  string `json:"body,omitempty"`
}

// sectionFamilies are the topics that count as each section (labels are
// compared in lower case); a label not listed counts as the topic of its
// own name. The first topic is the one a label trains.
var sectionFamilies = map[string][]string{
	"world":         {"world", "politics"},
	"politics":      {"politics", "world"},
	"sports":        {"sports"},
	"sport":         {"sports"},
	"business":      {"business", "energy"},
	"sci/tech":      {"technology", "science"},
	"tech":          {"technology", "science"},
	"technology":    {"technology", "science"},
	"science":       {"science", "technology"},
	"entertainment": {"entertainment"},
}

// Family is the topics that count as section label: World is world or
// politics, Business business or energy, Sci/Tech technology or science.
func Family(label string) []string {
	if f, ok := sectionFamilies[strings.ToLower(strings.TrimSpace(label))]; ok {
		return f
	}
	return []string{strings.ToLower(strings.TrimSpace(label))}
}

// LabelTopic is the topic a label trains: the first of its Family.
func LabelTopic(label string) string { return Family(label)[0] }

// MaxLabelledLine bounds one line of a labelled file.
const MaxLabelledLine = 16 << 20

// ReadLabelled reads labelled NDJSON: blank lines and lines starting with #
// are skipped; every other line needs a label and a title or text. A line
// without an id gets "line-N".
func ReadLabelled(r io.Reader) ([]Labelled, error) {
	var out []Labelled
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLabelledLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var it Labelled
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if it.Text == "" {
			it.Text, it.Body = it.Body, ""
		}
		if strings.TrimSpace(it.Label) == "" || (strings.TrimSpace(it.Title) == "" && strings.TrimSpace(it.Text) == "") {
			return nil, fmt.Errorf("line %d: a label and a title or text are required", n)
		}
		if it.ID == "" {
			it.ID = fmt.Sprintf("line-%d", n)
		}
		out = append(out, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read labelled documents: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("no labelled documents")
	}
	return out, nil
}

// Examples turns labelled documents into training examples, each label read
// as its topic (LabelTopic).
func Examples(items []Labelled) []Example {
	out := make([]Example, len(items))
	for i, it := range items {
		out[i] = Example{Title: it.Title, Body: it.Text, Label: LabelTopic(it.Label)}
	}
	return out
}

// PerTopic counts examples per label.
func PerTopic(examples []Example) map[string]int {
	out := map[string]int{}
	for _, e := range examples {
		out[e.Label]++
	}
	return out
}
