package main

// Section scoring for `classifier eval`: labelled news whose label is a
// section (World, Sports, tech, ...), scored as an editor would: is the
// primary topic of the expected section (top-1), are no other section's
// topics there (exact), is there no topic at all (none), and how many are
// flagged crime related, per section, with the confusion matrix.

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/contentindex"
)

// NewsItem is one labelled news document (topicmodel.Labelled).
type NewsItem = topicmodel.Labelled

// readNews reads labelled news NDJSON, gzip-compressed when the name ends in
// .gz.
func readNews(path string) ([]NewsItem, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	items, err := topicmodel.ReadLabelled(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return items, nil
}

// openMaybeGzip opens path, through gzip when its name ends in .gz.
func openMaybeGzip(path string) (io.Reader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, func() { _ = f.Close() }, nil
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return gz, func() { _ = gz.Close(); _ = f.Close() }, nil
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
	// Errors are documents whose primary topic is not of their section, or
	// that were flagged crime related in a section that is not crime, in
	// the order scored.
	Errors []DocError
}

// DocError is one document the decision got wrong, for reading.
type DocError struct {
	ID, Section, Title, Primary string
	Topics                      []string
	Crime                       bool
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
			for j, t := range topicmodel.Family(s) {
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
	fam := topicmodel.Family(it.Label)
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
	if !slices.Contains(fam, doc.PrimaryTopic) || (doc.IsCrimeRelated && !strings.EqualFold(it.Label, "crime")) {
		e.rep.Errors = append(e.rep.Errors, DocError{ID: it.ID, Section: it.Label, Title: it.Title,
			Primary: doc.PrimaryTopic, Topics: doc.Topics, Crime: doc.IsCrimeRelated})
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
		m, err := topicmodel.Train(ctx, topicmodel.Examples(train), cfg)
		if err != nil {
			return nil, fmt.Errorf("fold %d: %w", f+1, err)
		}
		s, err := topicmodel.Compile(m, topicmodel.MatcherDefault)
		if err != nil {
			return nil, fmt.Errorf("fold %d: %w", f+1, err)
		}
		if err := classifyNews(engine, s, decide, test, e); err != nil {
			return nil, fmt.Errorf("fold %d: %w", f+1, err)
		}
		if progress != nil {
			fmt.Fprintf(progress, "fold %d/%d: trained on %d, scored %d (%d terms, temperature %.3g, base weight %.3g)\n",
				f+1, k, len(train), len(test), len(m.Terms), m.Temperature, m.BaseWeight)
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

// printErrors lists up to n documents per section that the decision got
// wrong: crime flags outside crime first, then wrong primary topics.
func printErrors(w io.Writer, rep *SectionReport, n int) {
	if n <= 0 {
		return
	}
	shown := map[string]int{}
	for _, crime := range []bool{true, false} {
		for _, e := range rep.Errors {
			key := fmt.Sprint(e.Section, crime)
			if e.Crime != crime || shown[key] >= n {
				continue
			}
			shown[key]++
			what := "primary " + cmp.Or(e.Primary, "none")
			if crime {
				what = "crime flag"
			}
			fmt.Fprintf(w, "  %s [%s] %s: %q -> %v\n", e.ID, e.Section, what, truncate(e.Title, 80), e.Topics)
		}
	}
}

// isNewsFile reports whether path's first record has a "label" field: a
// section-labelled news file rather than a topics labels file.
func isNewsFile(path string) (bool, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return false, err
	}
	defer closeFn()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), topicmodel.MaxLabelledLine)
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
	cv, misses                int
	seed                      uint64
	trainCfg                  topicmodel.TrainConfig
	decide                    topicmodel.DecideConfig
	floors                    *SectionFloors // nil: none checked
}

// SectionFloors are the figures `classifier eval -floors` holds a
// section-labelled set to (docs/classification.md).
type SectionFloors struct {
	Top1, Exact float64 // over all documents, at least
	None        float64 // share with no topic, at most
	// CrimeFlags is the most crime flags any section whose reports borrow
	// crime's words (sports, sci/tech, entertainment) may carry.
	CrimeFlags float64
}

// The floors the test command holds the labelled news dev sets to
// (docs/classification.md): regression floors a little below the measured
// figures, and the goals where they are met.
var (
	// ShortDefaultFloors: the short items at the shipped defaults.
	ShortDefaultFloors = SectionFloors{Top1: 0.80, None: 0.02, CrimeFlags: 0.02}
	// FullDefaultFloors: the full articles at the shipped defaults.
	FullDefaultFloors = SectionFloors{Top1: 0.93, Exact: 0.90, None: 0.01, CrimeFlags: 0.02}
	// ShortTrainedFloors: the short items, classifier train cross-validated.
	ShortTrainedFloors = SectionFloors{Top1: 0.88, None: 0.01, CrimeFlags: 0.02}
	// FullTrainedFloors: the full articles, classifier train cross-validated.
	FullTrainedFloors = SectionFloors{Top1: 0.97, Exact: 0.92, None: 0.01, CrimeFlags: 0.02}
)

// crimeAverse reports whether section label is one where crime flags are
// almost always wrong.
func crimeAverse(label string) bool {
	switch strings.ToLower(label) {
	case "sports", "sport", "sci/tech", "tech", "technology", "science", "entertainment":
		return true
	}
	return false
}

// check returns a line per figure of rep below its floor.
func (f *SectionFloors) check(rep *SectionReport) []string {
	frac := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	var out []string
	t := rep.Total()
	if v := frac(t.Top1, t.Docs); v < f.Top1 {
		out = append(out, fmt.Sprintf("top-1 %.3f < %.3f", v, f.Top1))
	}
	if v := frac(t.Exact, t.Docs); v < f.Exact {
		out = append(out, fmt.Sprintf("exact %.3f < %.3f", v, f.Exact))
	}
	if v := frac(t.None, t.Docs); v > f.None {
		out = append(out, fmt.Sprintf("no topic %.3f > %.3f", v, f.None))
	}
	for _, s := range rep.Sections {
		if v := frac(s.Crime, s.Docs); crimeAverse(s.Section) && v > f.CrimeFlags {
			out = append(out, fmt.Sprintf("%s: crime flags %.3f > %.3f", s.Section, v, f.CrimeFlags))
		}
	}
	return out
}

// decideFlags defines the topic decision's flags of `classifier eval`.
func decideFlags(fl *flag.FlagSet, c *topicmodel.DecideConfig) {
	fl.Float64Var(&c.SecondaryMin, "secondary-min", topicmodel.SecondaryMinDefault, "probability a secondary topic of the model needs")
	fl.Float64Var(&c.RuleWeight, "rule-weight", topicmodel.RuleWeightDefault, "logit per distinct keyword a rule finds for a topic of the model (negative: off)")
	fl.Float64Var(&c.CrimeWeight, "crime-weight", topicmodel.CrimeWeightDefault, "logit per distinct keyword of a crime topic whose rule passed")
	fl.Float64Var(&c.CrimeMin, "crime-min", topicmodel.CrimeMinDefault, "probability a crime topic needs")
	fl.Func("crime-beside", "probability crime needs beside sports, entertainment, technology and science (default 0.9)", func(v string) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return err
		}
		c.CrimeBeside = map[string]float64{}
		for t := range topicmodel.CrimeBesideDefault() {
			c.CrimeBeside[t] = x
		}
		return nil
	})
	fl.Float64Var(&c.SectionFloor, "section-floor", topicmodel.SectionFloorDefault, "probability at which a section stays primary beside a more probable crime topic")
}

// trainFlags defines the training flags of `classifier train` and `eval`;
// the returned function loads the -base model into c once the flags are
// parsed.
func trainFlags(fl *flag.FlagSet, c *topicmodel.TrainConfig) func() error {
	base := fl.String("base", "default", "the model a trained model learns on top of and carries: default (the shipped lexicon), none, or a model JSON file")
	fl.IntVar(&c.Epochs, "epochs", topicmodel.EpochsDefault, "training passes")
	fl.Float64Var(&c.L2, "l2", topicmodel.L2Default, "weight decay")
	fl.Float64Var(&c.LearningRate, "lr", topicmodel.LearningRateDefault, "Adagrad's learning rate")
	fl.IntVar(&c.MinDocs, "min-docs", topicmodel.MinDocsDefault, "documents a term must occur in to be learned")
	fl.BoolVar(&c.Presence, "presence", false, "count a term found several times in a field once instead of 1 + ln(times)")
	fl.Float64Var(&c.BaseWeight, "base-weight", 0, "fix the base model's weight (0: chosen by cross-validation from topicmodel.BaseWeightGrid)")
	return func() error {
		m, err := loadModel(*base)
		if err != nil {
			return fmt.Errorf("-base: %w", err)
		}
		if m != nil && m.Base != nil {
			return errors.New("-base: the model has a base of its own; use its base instead")
		}
		c.Base = m
		return nil
	}
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
	decide := a.decide
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
		if m, err = topicmodel.Train(ctx, topicmodel.Examples(trainItems), trainCfg); err != nil {
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
	if a.misses > 0 {
		fmt.Fprintf(os.Stdout, "\nerrors (at most %d per section and kind):\n", a.misses)
		printErrors(os.Stdout, rep, a.misses)
	}
	if a.floors != nil {
		if fails := a.floors.check(rep); len(fails) > 0 {
			fmt.Fprintf(os.Stdout, "\nbelow the floors:\n  %s\n", strings.Join(fails, "\n  "))
			return fmt.Errorf("eval: %d figures below their floors", len(fails))
		}
		fmt.Fprintln(os.Stdout, "\nevery figure meets its floor")
	}
	return nil
}

// scoreNews scores items with engine and model m (nil: rules alone).
func scoreNews(engine *rules.Engine, m *topicmodel.Model, decide topicmodel.DecideConfig, items []NewsItem) (*SectionReport, error) {
	var s *topicmodel.Scorer
	if m != nil {
		var err error
		if s, err = topicmodel.Compile(m, topicmodel.MatcherDefault); err != nil {
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
