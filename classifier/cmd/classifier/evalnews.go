package main

// Section scoring for `classifier eval`: labelled news whose label is a
// section (World, Sports, tech, ...), scored as an editor would: is the
// primary topic of the expected section (top-1), are no other section's
// topics there (exact), is there no topic at all (none), and how many are
// flagged crime related, per section, with the confusion matrix.

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/contentindex"
)

// NewsItem is one line of a labelled news file: {"id", "label", "title",
// "text"}; "body" is read as "text".
type NewsItem struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Title string `json:"title"`
	Text  string `json:"text"`
	Body  string `json:"body,omitempty"`
}

// sectionFamilies are the topics that count as each section (labels are
// compared in lower case); a label not listed counts as the topic of its
// own name. The first topic is the one `classifier train` learns for the
// label.
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

// family is the topics that count as section label.
func family(label string) []string {
	if f, ok := sectionFamilies[strings.ToLower(label)]; ok {
		return f
	}
	return []string{strings.ToLower(label)}
}

// labelTopic is the topic a section label trains.
func labelTopic(label string) string { return family(label)[0] }

// readNews reads labelled news NDJSON, gzip-compressed when the name ends in
// .gz.
func readNews(path string) ([]NewsItem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	var out []NewsItem
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var it NewsItem
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		if it.Text == "" {
			it.Text, it.Body = it.Body, ""
		}
		if strings.TrimSpace(it.Label) == "" || (strings.TrimSpace(it.Title) == "" && strings.TrimSpace(it.Text) == "") {
			return nil, fmt.Errorf("%s line %d: a label and a title or text are required", path, n)
		}
		if it.ID == "" {
			it.ID = fmt.Sprintf("line-%d", n)
		}
		out = append(out, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no labelled documents", path)
	}
	return out, nil
}

// SectionStats are one section's figures.
type SectionStats struct {
	Section string
	Docs    int
	Top1    int // primary topic of the section
	Exact   int // top-1, and no other section's topic
	None    int // no topic at all
	Crime   int // flagged crime related
}

// SectionReport is the outcome of a section evaluation.
type SectionReport struct {
	Sections []SectionStats // in label order of first appearance
	// Confusion[expected][predicted] counts documents by the section of
	// their primary topic ("none", or "other" for a topic of no section).
	Confusion map[string]map[string]int
	Columns   []string
	// PerDoc is the mean time of the topic decision per document.
	PerDoc time.Duration
}

// Total sums the sections.
func (r *SectionReport) Total() SectionStats {
	t := SectionStats{Section: "all"}
	for _, s := range r.Sections {
		t.Docs += s.Docs
		t.Top1 += s.Top1
		t.Exact += s.Exact
		t.None += s.None
		t.Crime += s.Crime
	}
	return t
}

// Section returns the named section's figures (zero when absent).
func (r *SectionReport) Section(name string) SectionStats {
	for _, s := range r.Sections {
		if strings.EqualFold(s.Section, name) {
			return s
		}
	}
	return SectionStats{Section: name}
}

// sectionEvaluator scores documents against the sections of one set.
type sectionEvaluator struct {
	sections []string       // labels, first appearance order
	topicOf  map[string]int // topic -> section it belongs to (first wins)
	rep      *SectionReport
	stats    map[string]*SectionStats
	elapsed  time.Duration
}

func newSectionEvaluator(items []NewsItem) *sectionEvaluator {
	e := &sectionEvaluator{topicOf: map[string]int{}, stats: map[string]*SectionStats{},
		rep: &SectionReport{Confusion: map[string]map[string]int{}}}
	for _, it := range items {
		if _, ok := e.stats[it.Label]; ok {
			continue
		}
		e.stats[it.Label] = &SectionStats{Section: it.Label}
		e.sections = append(e.sections, it.Label)
	}
	// A topic belongs to the first section whose family names it first,
	// then to the first that names it at all.
	for pass := range 2 {
		for i, s := range e.sections {
			for j, t := range family(s) {
				if _, ok := e.topicOf[t]; !ok && (pass == 1 || j == 0) {
					e.topicOf[t] = i
				}
			}
		}
	}
	e.rep.Columns = append(slices.Clone(e.sections), "other", "none")
	return e
}

// sectionOf names the section topic counts as, "other" when none.
func (e *sectionEvaluator) sectionOf(topic string) string {
	if i, ok := e.topicOf[topic]; ok {
		return e.sections[i]
	}
	return "other"
}

// add scores one classified document.
func (e *sectionEvaluator) add(it *NewsItem, doc *domain.ClassifiedContent) {
	s := e.stats[it.Label]
	s.Docs++
	fam := family(it.Label)
	predicted := "none"
	if doc.PrimaryTopic != "" {
		predicted = e.sectionOf(doc.PrimaryTopic)
		if slices.Contains(fam, doc.PrimaryTopic) {
			s.Top1++
			exact := true
			for _, t := range doc.Topics {
				if sec := e.sectionOf(t); sec != "other" && !slices.Contains(fam, t) {
					exact = false
				}
			}
			if exact {
				s.Exact++
			}
		}
	} else {
		s.None++
	}
	if doc.IsCrimeRelated {
		s.Crime++
	}
	row := e.rep.Confusion[it.Label]
	if row == nil {
		row = map[string]int{}
		e.rep.Confusion[it.Label] = row
	}
	row[predicted]++
}

func (e *sectionEvaluator) report() *SectionReport {
	for _, s := range e.sections {
		e.rep.Sections = append(e.rep.Sections, *e.stats[s])
	}
	if n := e.rep.Total().Docs; n > 0 {
		e.rep.PerDoc = e.elapsed / time.Duration(n)
	}
	return e.rep
}

// classifyNews runs items through a pipeline over engine and model (nil:
// rules only), scoring each into e.
func classifyNews(engine *rules.Engine, model *topicmodel.Scorer, decide topicmodel.DecideConfig, items []NewsItem, e *sectionEvaluator) error {
	p, err := pipeline.New(pipeline.Config{Topics: engine, Decide: decide,
		Model: func(string, string) (*topicmodel.Scorer, *topicmodel.Scorer) { return model, nil }})
	if err != nil {
		return err
	}
	for i := range items {
		it := &items[i]
		start := time.Now()
		doc, err := p.Classify(&domain.RawContent{
			RawDocument: contentindex.RawDocument{
				ID: it.ID, URL: "https://eval.invalid/" + url.PathEscape(it.ID), SourceName: "eval",
				Title: it.Title, RawText: it.Text, OGType: "article",
			},
			Index: "eval_raw_content",
		})
		e.elapsed += time.Since(start)
		if err != nil {
			return fmt.Errorf("document %s: %w", it.ID, err)
		}
		e.add(it, doc)
	}
	return nil
}

// examplesOf turns labelled news into training examples, each label read as
// its section's topic.
func examplesOf(items []NewsItem) []topicmodel.Example {
	out := make([]topicmodel.Example, len(items))
	for i, it := range items {
		out[i] = topicmodel.Example{Title: it.Title, Body: it.Text, Label: labelTopic(it.Label)}
	}
	return out
}

// crossValidate splits items into k folds stratified by label, trains a model
// on k-1 of them and scores the one left out, k times: no document is scored
// by a model that learned from it.
func crossValidate(ctx context.Context, engine *rules.Engine, decide topicmodel.DecideConfig, items []NewsItem, k int, cfg topicmodel.TrainConfig, progress io.Writer) (*SectionReport, error) {
	if k < 2 || k > len(items) {
		return nil, fmt.Errorf("-cv %d: want 2..%d folds", k, len(items))
	}
	fold := make([]int, len(items))
	byLabel := map[string][]int{}
	for i, it := range items {
		byLabel[it.Label] = append(byLabel[it.Label], i)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xcf01d))
	for _, idx := range byLabel {
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for j, i := range idx {
			fold[i] = j % k
		}
	}
	e := newSectionEvaluator(items)
	for f := range k {
		var train, test []NewsItem
		for i, it := range items {
			if fold[i] == f {
				test = append(test, it)
			} else {
				train = append(train, it)
			}
		}
		m, err := topicmodel.Train(ctx, examplesOf(train), cfg)
		if err != nil {
			return nil, fmt.Errorf("fold %d: %w", f+1, err)
		}
		s, err := topicmodel.Compile(m, engine.Kind())
		if err != nil {
			return nil, fmt.Errorf("fold %d: %w", f+1, err)
		}
		if err := classifyNews(engine, s, decide, test, e); err != nil {
			return nil, fmt.Errorf("fold %d: %w", f+1, err)
		}
		if progress != nil {
			fmt.Fprintf(progress, "fold %d/%d: trained on %d, scored %d (%d terms, temperature %.3g)\n",
				f+1, k, len(train), len(test), len(m.Terms), m.Temperature)
		}
	}
	return e.report(), nil
}

func pct(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
}

// printSectionReport prints the per-section table and the confusion matrix.
func printSectionReport(w io.Writer, rep *SectionReport, title string) {
	fmt.Fprintf(w, "%s\n\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "section\tdocs\ttop-1\texact\tnone\tcrime flags\t")
	for _, s := range append(slices.Clone(rep.Sections), rep.Total()) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", s.Section, s.Docs, pct(s.Top1, s.Docs), pct(s.Exact, s.Docs),
			pct(s.None, s.Docs), pct(s.Crime, s.Docs))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nconfusion (rows: expected section; columns: section of the primary topic)\n\n")
	fmt.Fprintf(tw, "\t%s\t\n", strings.Join(rep.Columns, "\t"))
	for _, s := range rep.Sections {
		row := []string{s.Section}
		for _, c := range rep.Columns {
			row = append(row, fmt.Sprint(rep.Confusion[s.Section][c]))
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\ntopic decision per document: %s\n", rep.PerDoc)
}

// isNewsFile reports whether path's first record has a "label" field: a
// section-labelled news file rather than a topics labels file.
func isNewsFile(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &probe); err != nil {
			return false, nil // readLabels reports it
		}
		_, ok := probe["label"]
		return ok, nil
	}
	return false, sc.Err()
}

// sectionEval is what `classifier eval` was asked for a labelled news file.
type sectionEval struct {
	file, rules, model, train string
	opts                      rules.Options
	cv                        int
	seed                      uint64
	trainCfg                  topicmodel.TrainConfig
}

// trainFlags defines the training flags of `classifier train` and `eval`.
func trainFlags(fl *flag.FlagSet, c *topicmodel.TrainConfig) {
	fl.IntVar(&c.Epochs, "epochs", topicmodel.EpochsDefault, "training passes")
	fl.Float64Var(&c.L2, "l2", topicmodel.L2Default, "weight decay")
	fl.Float64Var(&c.LearningRate, "lr", topicmodel.LearningRateDefault, "Adagrad's learning rate")
	fl.IntVar(&c.MinDocs, "min-docs", topicmodel.MinDocsDefault, "documents a term must occur in to be learned")
}

// evalSections is `classifier eval` on labelled news.
func evalSections(ctx context.Context, a sectionEval) error {
	items, err := readNews(a.file)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	ruleSet, err := loadEvalRules(ctx, a.rules)
	if err != nil {
		return fmt.Errorf("eval: rules: %w", err)
	}
	engine, err := rules.NewEngineWithOptions(a.opts, ruleSet)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	decide := topicmodel.DecideConfig{}
	trainCfg := a.trainCfg
	trainCfg.Seed = a.seed
	var rep *SectionReport
	var what string
	switch {
	case a.cv > 0:
		what = fmt.Sprintf("%d-fold cross-validation of classifier train", a.cv)
		rep, err = crossValidate(ctx, engine, decide, items, a.cv, trainCfg, os.Stderr)
	case a.train != "":
		what = "a model trained on " + a.train
		var trainItems []NewsItem
		if trainItems, err = readNews(a.train); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		var m *topicmodel.Model
		if m, err = topicmodel.Train(ctx, examplesOf(trainItems), trainCfg); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		rep, err = scoreNews(engine, m, decide, items)
	default:
		what = "model " + a.model
		var m *topicmodel.Model
		if m, err = loadModel(a.model); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		rep, err = scoreNews(engine, m, decide, items)
	}
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	printSectionReport(os.Stdout, rep, fmt.Sprintf("%s: %d documents, rules %s (%d), %s", a.file, len(items), a.rules, engine.RuleCount(), what))
	return nil
}

// scoreNews scores items with engine and model m (nil: rules alone).
func scoreNews(engine *rules.Engine, m *topicmodel.Model, decide topicmodel.DecideConfig, items []NewsItem) (*SectionReport, error) {
	var s *topicmodel.Scorer
	if m != nil {
		var err error
		if s, err = topicmodel.Compile(m, engine.Kind()); err != nil {
			return nil, err
		}
	}
	e := newSectionEvaluator(items)
	if err := classifyNews(engine, s, decide, items, e); err != nil {
		return nil, err
	}
	return e.report(), nil
}

// loadModel is the model -model names: default, none or a JSON file.
func loadModel(from string) (*topicmodel.Model, error) {
	switch from {
	case "default", "":
		return topicmodel.DefaultLexicon()
	case "none":
		return nil, nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return nil, err
	}
	var m topicmodel.Model
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return &m, m.Validate()
}
