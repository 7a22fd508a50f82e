package main

// The eval command: classification quality on a labeled set.
//
//	classifier eval [flags] LABELS.ndjson
//
// It classifies every labeled document with the pipeline and a rule engine
// built here (nothing is read from or written to Elasticsearch, and the rule
// database is only read), then prints per-topic precision, recall and F1, the
// crime false-positive rate, the share of articles left without a topic, and
// the worst misses with the keywords that nearly matched. With -floors it
// exits non-zero when a figure is below its floor. docs/classification.md
// describes the label format, the figures and the floors.

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"
	"text/tabwriter"
	"time"

	_ "github.com/lib/pq" // postgres driver

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/postgres"
)

// Floors the test command holds the shipped rules to (docs/classification.md).
const (
	FloorRecall    = 0.85 // per shipped topic
	FloorPrecision = 0.90 // per shipped topic
	FloorCrimeFP   = 0.02 // crime-flagged share of non-crime documents, at most
	FloorNoTopic   = 0.10 // share of news articles with no topic, below
)

// crimePriority orders the crime subcategories as the default rules do, so
// that a label's expected crime_subcategory defaults to what the pipeline
// would pick among its topics.
var crimePriority = []string{"violent_crime", "organized_crime", "drug_crime", "property_crime", "criminal_justice"}

// Label is one line of a labels file.
type Label struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
	// Topics must all be found; any other topic found is a false positive,
	// except those in Also. An empty list is a document no shipped topic
	// fits (it is not counted in the no-topic share).
	Topics []string `json:"topics"`
	// Also are topics that may be found without counting against precision
	// (a crime story in a named town may be local news too).
	Also []string `json:"also,omitempty"`
	// Crime is the expected is_crime_related; when absent, whether Topics
	// hold a crime subcategory. A document whose crime topics are all in
	// Also is left out of the crime figures.
	Crime *bool `json:"crime,omitempty"`
	// CrimeSubcategory is the expected crime_subcategory; when absent, the
	// first of Topics in the default rules' crime priority order.
	CrimeSubcategory *string `json:"crime_subcategory,omitempty"`
}

func (l *Label) expectedCrime() (crime, optional bool) {
	if l.Crime != nil {
		return *l.Crime, false
	}
	for _, t := range l.Topics {
		if rules.IsCrimeSubcategory(t) {
			return true, false
		}
	}
	return false, slices.ContainsFunc(l.Also, rules.IsCrimeSubcategory)
}

func (l *Label) expectedSubcategory() string {
	if l.CrimeSubcategory != nil {
		return *l.CrimeSubcategory
	}
	for _, t := range crimePriority {
		if slices.Contains(l.Topics, t) {
			return t
		}
	}
	return ""
}

// readLabels reads a labels file: one JSON object per line, blank lines and
// lines starting with # ignored.
func readLabels(r io.Reader) ([]Label, error) {
	var out []Label
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	ids := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var l Label
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if l.ID == "" || (strings.TrimSpace(l.Title) == "" && strings.TrimSpace(l.Body) == "") {
			return nil, fmt.Errorf("line %d: id and a title or body are required", n)
		}
		if prev, dup := ids[l.ID]; dup {
			return nil, fmt.Errorf("line %d: id %q already on line %d", n, l.ID, prev)
		}
		ids[l.ID] = n
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no labeled documents")
	}
	return out, nil
}

// TopicStats are one topic's counts and figures.
type TopicStats struct {
	Topic                  string
	Support, TP, FP, FN    int
	Precision, Recall, F1  float64
	Predicted              int  // TP + FP
	Shipped                bool // a rule of the evaluated set has this topic
	PrecisionNA, RecallNA  bool // nothing predicted / nothing expected
	BelowRecall, BelowPrec bool
}

// Miss is an expected topic that was not found, or a topic found that was
// not expected, with what the engine saw.
type Miss struct {
	ID, Title, Topic string
	// Found are the keywords of the topic's best rule found in the document,
	// Needed how many it needed and Keywords how many it has.
	Rule            string
	Found           []string
	Needed, Missing int
	// Near are keywords of the topic's rules that did not match but are close
	// to a word of the document (an inflection, or a shared prefix).
	Near []string
}

// Report is the outcome of an evaluation.
type Report struct {
	Options  rules.Options
	Rules    int
	Keywords int // distinct keywords in the engine
	Docs     int
	Topics   []TopicStats
	MicroP   float64
	MicroR   float64
	MicroF1  float64
	NonCrime int // documents expected not crime related
	CrimeFP  int // of those, flagged crime related
	Crime    int // documents expected crime related
	CrimeTP  int // of those, flagged
	SubOK    int // of those flagged, with the expected subcategory
	News     int // documents with at least one expected topic
	NoTopic  int // of those, given no topic
	Misses   []Miss
	FalsePos []Miss
	// MatchPerDoc is the mean time of Engine.Match (normalize, stem, match,
	// score) over the set's documents; Build the engine's build time, when
	// the caller measured it.
	MatchPerDoc time.Duration
	Build       time.Duration
}

// CrimeFPRate is CrimeFP over NonCrime.
func (r *Report) CrimeFPRate() float64 { return ratio(r.CrimeFP, r.NonCrime) }

// NoTopicRate is NoTopic over News.
func (r *Report) NoTopicRate() float64 { return ratio(r.NoTopic, r.News) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// evaluate classifies labels with engine and model (nil: the rules decide
// alone) through the pipeline and scores the result. ruleTopics are the
// topics of the evaluated rules.
func evaluate(engine *rules.Engine, model *topicmodel.Scorer, decide topicmodel.DecideConfig, ruleTopics []string, labels []Label) (*Report, error) {
	classifier, err := pipeline.New(pipeline.Config{Topics: engine, Decide: decide,
		Model: func(string, string) (*topicmodel.Scorer, *topicmodel.Scorer) { return model, nil }})
	if err != nil {
		return nil, err
	}
	rep := &Report{Options: engine.Options(), Rules: engine.RuleCount(), Keywords: engine.KeywordCount(), Docs: len(labels)}
	stats := map[string]*TopicStats{}
	topic := func(t string) *TopicStats {
		s, ok := stats[t]
		if !ok {
			s = &TopicStats{Topic: t}
			stats[t] = s
		}
		return s
	}
	for _, t := range ruleTopics {
		topic(t).Shipped = true
	}
	for i := range labels {
		l := &labels[i]
		doc, err := classifier.Classify(&domain.RawContent{
			RawDocument: contentindex.RawDocument{
				ID: l.ID, URL: "https://eval.invalid/" + url.PathEscape(l.ID), SourceName: "eval",
				Title: l.Title, RawText: l.Body, OGType: "article",
			},
			Index: "eval_raw_content",
		})
		if err != nil {
			return nil, fmt.Errorf("document %s: %w", l.ID, err)
		}
		var explained []rules.Match
		explain := func() []rules.Match {
			if explained == nil {
				explained = engine.Explain(l.Title, l.Body)
			}
			return explained
		}
		for _, t := range l.Topics {
			s := topic(t)
			s.Support++
			if slices.Contains(doc.Topics, t) {
				s.TP++
			} else {
				s.FN++
				rep.Misses = append(rep.Misses, missFor(engine, l, t, explain()))
			}
		}
		for _, t := range doc.Topics {
			if !slices.Contains(l.Topics, t) && !slices.Contains(l.Also, t) {
				topic(t).FP++
				rep.FalsePos = append(rep.FalsePos, missFor(engine, l, t, explain()))
			}
		}
		crime, optional := l.expectedCrime()
		switch {
		case optional:
		case crime:
			rep.Crime++
			if doc.IsCrimeRelated {
				rep.CrimeTP++
				if doc.CrimeSubcategory != nil && *doc.CrimeSubcategory == l.expectedSubcategory() {
					rep.SubOK++
				}
			}
		default:
			rep.NonCrime++
			if doc.IsCrimeRelated {
				rep.CrimeFP++
			}
		}
		if len(l.Topics) > 0 {
			rep.News++
			if len(doc.Topics) == 0 {
				rep.NoTopic++
			}
		}
	}
	// Time the engine alone over the set: passes until a second has gone by
	// (at least one).
	start, docs := time.Now(), 0
	for time.Since(start) < time.Second {
		for i := range labels {
			engine.Match(labels[i].Title, labels[i].Body)
		}
		docs += len(labels)
	}
	rep.MatchPerDoc = time.Since(start) / time.Duration(docs)
	var tp, fp, fn int
	for _, s := range stats {
		s.Predicted = s.TP + s.FP
		s.PrecisionNA, s.RecallNA = s.Predicted == 0, s.Support == 0
		s.Precision, s.Recall = ratio(s.TP, s.Predicted), ratio(s.TP, s.Support)
		if s.PrecisionNA {
			s.Precision = 1 // nothing claimed, nothing wrong
		}
		if s.Precision+s.Recall > 0 {
			s.F1 = 2 * s.Precision * s.Recall / (s.Precision + s.Recall)
		}
		tp, fp, fn = tp+s.TP, fp+s.FP, fn+s.FN
		rep.Topics = append(rep.Topics, *s)
	}
	slices.SortFunc(rep.Topics, func(a, b TopicStats) int { return cmp.Compare(a.Topic, b.Topic) })
	rep.MicroP, rep.MicroR = ratio(tp, tp+fp), ratio(tp, tp+fn)
	if rep.MicroP+rep.MicroR > 0 {
		rep.MicroF1 = 2 * rep.MicroP * rep.MicroR / (rep.MicroP + rep.MicroR)
	}
	// The worst misses first: the furthest from matching.
	slices.SortStableFunc(rep.Misses, func(a, b Miss) int {
		return cmp.Or(cmp.Compare(b.Missing, a.Missing), cmp.Compare(a.ID, b.ID))
	})
	slices.SortStableFunc(rep.FalsePos, func(a, b Miss) int {
		return cmp.Or(cmp.Compare(boolInt(rules.IsCrimeSubcategory(b.Topic)), boolInt(rules.IsCrimeSubcategory(a.Topic))),
			cmp.Compare(a.ID, b.ID))
	})
	return rep, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// missFor explains topic t on document l from the engine's explanation: the
// best rule of the topic (most keywords found relative to what it needs),
// and the keywords of the topic's rules that nearly matched.
func missFor(engine *rules.Engine, l *Label, t string, explained []rules.Match) Miss {
	m := Miss{ID: l.ID, Title: l.Title, Topic: t, Missing: math.MaxInt32}
	for _, x := range explained {
		if x.Rule.Topic != t {
			continue
		}
		if missing := max(0, x.Needed-x.Hits); missing < m.Missing {
			m.Rule, m.Found, m.Needed, m.Missing = x.Rule.Name, x.MatchedKeywords, x.Needed, missing
		}
	}
	ruleSet := engine.Rules()
	if m.Missing == math.MaxInt32 {
		// No rule of the topic found anything: it needs all of its threshold.
		m.Missing = 0
		for _, r := range ruleSet {
			if r.Topic == t {
				if m.Rule == "" || r.Needed < m.Needed {
					m.Rule, m.Needed, m.Missing = r.Name, r.Needed, r.Needed
				}
			}
		}
	}
	m.Near = nearKeywords(engine, l, t, ruleSet, m.Found)
	return m
}

// nearKeywords returns keywords of topic t's rules that did not match but
// are close to the document's words: the same stem (an inflection the
// engine missed because it does not stem), or, for one-word keywords, the
// same first five letters ("acquisition" near "acquirer").
func nearKeywords(engine *rules.Engine, l *Label, t string, ruleSet []rules.RuleInfo, found []string) []string {
	text := rules.Normalize(l.Title) + " " + rules.Normalize(l.Body)
	stemmed := " " + rules.StemText(text) + " "
	words := strings.Fields(text)
	var near []string
	seen := map[string]bool{}
	for _, kw := range found {
		seen[engine.Key(kw)] = true
	}
	for _, r := range ruleSet {
		if r.Topic != t {
			continue
		}
		for _, kw := range r.Keywords {
			key := engine.Key(kw)
			if seen[key] {
				continue
			}
			n := rules.Normalize(kw)
			hit := ""
			if strings.Contains(stemmed, " "+rules.StemText(n)+" ") {
				hit = kw
			} else if !strings.Contains(n, " ") && len(n) >= 5 {
				for _, w := range words {
					if len(w) >= 5 && w[:5] == n[:5] && w != n && !seen[engine.Key(w)] {
						hit = kw + "~" + w
						break
					}
				}
			}
			if hit != "" {
				seen[key] = true
				near = append(near, hit)
			}
		}
	}
	return near
}

// checkFloors marks the figures below their floors and returns a line for
// each. Per-topic floors apply to the topics of the evaluated rules that
// the labels hold.
func checkFloors(rep *Report, minRecall, minPrecision, maxCrimeFP, maxNoTopic float64) []string {
	var fails []string
	for i := range rep.Topics {
		s := &rep.Topics[i]
		if !s.Shipped || s.Support == 0 {
			continue
		}
		if s.Recall < minRecall {
			s.BelowRecall = true
			fails = append(fails, fmt.Sprintf("%s: recall %.3f < %.2f", s.Topic, s.Recall, minRecall))
		}
		if s.Precision < minPrecision {
			s.BelowPrec = true
			fails = append(fails, fmt.Sprintf("%s: precision %.3f < %.2f", s.Topic, s.Precision, minPrecision))
		}
	}
	if r := rep.CrimeFPRate(); r > maxCrimeFP {
		fails = append(fails, fmt.Sprintf("crime false positives %.3f > %.2f of non-crime documents", r, maxCrimeFP))
	}
	if r := rep.NoTopicRate(); r >= maxNoTopic {
		fails = append(fails, fmt.Sprintf("articles with no topic %.3f >= %.2f", r, maxNoTopic))
	}
	for i := range rep.Topics {
		if s := rep.Topics[i]; s.Shipped && s.Support == 0 {
			fails = append(fails, fmt.Sprintf("%s: no labeled document expects this topic of the evaluated rules", s.Topic))
		}
	}
	return fails
}

func fmtFigure(v float64, na bool) string {
	if na {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}

// printReport writes the report as aligned text, or as Markdown tables.
func printReport(w io.Writer, rep *Report, source string, misses int, markdown bool) {
	o := rep.Options
	stem := "off"
	if o.Stemming {
		stem = "on"
	}
	fmt.Fprintf(w, "rules: %s (%d rules in use); matcher %s, stemming %s, scoring %s; %d documents\n\n",
		source, rep.Rules, o.Matcher, stem, o.Scoring, rep.Docs)
	header := []string{"topic", "support", "tp", "fp", "fn", "precision", "recall", "f1"}
	var rows [][]string
	for _, s := range rep.Topics {
		name := s.Topic
		if !s.Shipped {
			name += " (no rule)"
		}
		if s.BelowPrec || s.BelowRecall {
			name += " !"
		}
		rows = append(rows, []string{name, strconv.Itoa(s.Support), strconv.Itoa(s.TP), strconv.Itoa(s.FP), strconv.Itoa(s.FN),
			fmtFigure(s.Precision, s.PrecisionNA), fmtFigure(s.Recall, s.RecallNA), fmtFigure(s.F1, s.PrecisionNA && s.RecallNA)})
	}
	rows = append(rows, []string{"micro average", "", "", "", "", fmt.Sprintf("%.3f", rep.MicroP), fmt.Sprintf("%.3f", rep.MicroR), fmt.Sprintf("%.3f", rep.MicroF1)})
	if markdown {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%s\t\n", strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t\n", strings.Join(r, "\t"))
		}
		_ = tw.Flush()
	}
	fmt.Fprintln(w)
	bullet := ""
	if markdown {
		bullet = "- "
	}
	fmt.Fprintf(w, "%scrime false positives: %d of %d non-crime documents (%.1f%%)\n", bullet, rep.CrimeFP, rep.NonCrime, 100*rep.CrimeFPRate())
	fmt.Fprintf(w, "%scrime recall: %d of %d crime documents flagged (%.1f%%); subcategory right on %d of them\n",
		bullet, rep.CrimeTP, rep.Crime, 100*ratio(rep.CrimeTP, rep.Crime), rep.SubOK)
	fmt.Fprintf(w, "%sarticles with no topic: %d of %d (%.1f%%)\n", bullet, rep.NoTopic, rep.News, 100*rep.NoTopicRate())
	fmt.Fprintf(w, "%sengine: %d distinct keywords, built in %s; %.1f µs per document (Engine.Match)\n",
		bullet, rep.Keywords, rep.Build.Round(time.Millisecond), float64(rep.MatchPerDoc.Nanoseconds())/1e3)
	if misses <= 0 {
		return
	}
	printMisses(w, "worst misses (expected topic not found)", rep.Misses, misses)
	printMisses(w, "false positives (topic found, not expected)", rep.FalsePos, misses)
}

func printMisses(w io.Writer, title string, ms []Miss, n int) {
	fmt.Fprintf(w, "\n%s: %d\n", title, len(ms))
	for _, m := range ms[:min(n, len(ms))] {
		found := "nothing"
		if len(m.Found) > 0 {
			found = strings.Join(m.Found, ", ")
		}
		fmt.Fprintf(w, "  %s %s: %q\n    rule %q found %d of %d needed: %s", m.ID, m.Topic, truncate(m.Title, 70),
			m.Rule, len(m.Found), m.Needed, found)
		if len(m.Near) > 0 {
			fmt.Fprintf(w, "; near: %s", strings.Join(m.Near, ", "))
		}
		fmt.Fprintln(w)
	}
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// evalCommand is `classifier eval`.
func evalCommand(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("eval", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "usage: classifier eval [flags] LABELS.ndjson\n\n"+
			"Classifies labeled documents (nothing is written anywhere) and prints per-topic precision,\n"+
			"recall and F1, the crime false-positive rate, the share without a topic and the worst misses.\n\n")
		fl.PrintDefaults()
	}
	rulesFrom := fl.String("rules", "db", "where the rules come from: none, db (the enabled rules in CLASSIFIER_DATABASE_URL, read only), "+
		"migrations or migrations:N (the default rules the embedded migrations up to N seed, in a scratch database made with POSTGRES_ADMIN_URL and dropped after), "+
		"or a JSON file (a GET /api/v1/rules response or an array of rules)")
	matcher := fl.String("matcher", envOr("CLASSIFIER_RULE_MATCHER", string(rules.MatcherKindDefault)), "rule matcher: aho_corasick, token_index or naive")
	stemming := fl.String("stemming", envOr("CLASSIFIER_RULE_STEMMING", strconv.FormatBool(rules.StemmingDefault)), "stem keywords and text (true or false)")
	scoring := fl.String("scoring", envOr("CLASSIFIER_RULE_SCORING", string(rules.ScoringDefault)), "rule threshold: min_keywords or spec")
	floors := fl.Bool("floors", false, fmt.Sprintf("exit with status 1 when a figure is below its floor (recall >= %.2f and precision >= %.2f per topic of the rules, crime false positives <= %.2f, no topic < %.2f)",
		FloorRecall, FloorPrecision, FloorCrimeFP, FloorNoTopic))
	misses := fl.Int("misses", 15, "how many misses and false positives to list")
	markdown := fl.Bool("markdown", false, "print the tables as Markdown")
	modelFrom := fl.String("model", "default", "the topic model: default (the shipped lexicon), none (the rules alone), or a model JSON file (classifier train -o)")
	cv := fl.Int("cv", 0, "labelled news only: K-fold cross-validation of `classifier train` (train on K-1 folds, score the fold left out); overrides -model")
	trainFile := fl.String("train", "", "labelled news only: train a model on this file and score the evaluated file with it; overrides -model")
	seed := fl.Uint64("seed", 1, "labelled news only: the seed of the folds and of training")
	var trainCfg topicmodel.TrainConfig
	loadBase := trainFlags(fl, &trainCfg)
	var decide topicmodel.DecideConfig
	decideFlags(fl, &decide)
	var sf SectionFloors
	fl.Float64Var(&sf.Top1, "min-top1", 0.75, "labelled news with -floors: the least top-1 over all documents")
	fl.Float64Var(&sf.Exact, "min-exact", 0, "labelled news with -floors: the least exact share over all documents")
	fl.Float64Var(&sf.None, "max-none", 0.10, "labelled news with -floors: the most documents with no topic")
	fl.Float64Var(&sf.CrimeFlags, "max-crime-flags", 0.02, "labelled news with -floors: the most crime flags in sports, sci/tech and entertainment sections")
	files, err := parseInterspersed(fl, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		fl.Usage()
		return errors.New("eval: want exactly one labels file")
	}
	stem, err := strconv.ParseBool(*stemming)
	if err != nil {
		return fmt.Errorf("eval: -stemming: %w", err)
	}
	opts := rules.Options{Matcher: rules.MatcherKind(*matcher), Stemming: stem, Scoring: rules.Scoring(*scoring)}

	news, err := isNewsFile(files[0])
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if news {
		if err := loadBase(); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		var floorsP *SectionFloors
		if *floors {
			floorsP = &sf
		}
		return evalSections(ctx, sectionEval{floors: floorsP, file: files[0], rules: *rulesFrom, opts: opts, model: *modelFrom,
			cv: *cv, train: *trainFile, seed: *seed, trainCfg: trainCfg, decide: decide, misses: *misses})
	}
	f, err := os.Open(files[0])
	if err != nil {
		return err
	}
	labels, err := readLabels(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("eval: %s: %w", files[0], err)
	}
	ruleSet, err := loadEvalRules(ctx, *rulesFrom)
	if err != nil {
		return fmt.Errorf("eval: rules: %w", err)
	}
	built := time.Now()
	engine, err := rules.NewEngineWithOptions(opts, ruleSet)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	buildTime := time.Since(built)
	var topics []string
	for _, r := range engine.Rules() {
		topics = append(topics, r.Topic)
	}
	m, err := loadModel(*modelFrom)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	var scorer *topicmodel.Scorer
	if m != nil {
		if scorer, err = topicmodel.Compile(m, topicmodel.MatcherDefault); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	rep, err := evaluate(engine, scorer, decide, topics, labels)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	rep.Build = buildTime
	var fails []string
	if *floors {
		fails = checkFloors(rep, FloorRecall, FloorPrecision, FloorCrimeFP, FloorNoTopic)
	}
	printReport(os.Stdout, rep, *rulesFrom, *misses, *markdown)
	if *floors {
		if len(fails) > 0 {
			fmt.Fprintf(os.Stdout, "\nbelow the floors:\n  %s\n", strings.Join(fails, "\n  "))
			return fmt.Errorf("eval: %d figures below their floors", len(fails))
		}
		fmt.Fprintln(os.Stdout, "\nevery figure meets its floor")
	}
	return nil
}

func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

// loadEvalRules returns the rules named by from (see the -rules flag).
func loadEvalRules(ctx context.Context, from string) ([]rules.Rule, error) {
	switch {
	case from == "none":
		return nil, nil
	case from == "db":
		dsn := os.Getenv("CLASSIFIER_DATABASE_URL")
		if dsn == "" {
			return nil, errors.New("-rules db: CLASSIFIER_DATABASE_URL is not set")
		}
		return loadRulesFromDB(ctx, dsn)
	case from == "migrations" || strings.HasPrefix(from, "migrations:"):
		upTo := uint64(math.MaxUint32)
		if v, ok := strings.CutPrefix(from, "migrations:"); ok {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("-rules %s: want migrations:N", from)
			}
			upTo = n
		}
		return loadRulesFromMigrations(ctx, upTo)
	}
	return loadRulesFromFile(from)
}

func loadRulesFromDB(ctx context.Context, dsn string) ([]rules.Rule, error) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	list, _, err := rulestore.NewRepository(db).LoadEnabled(ctx)
	return list, err
}

// loadRulesFromMigrations applies the embedded migrations numbered up to
// upTo to a scratch database and reads its enabled rules: the default rule
// set of a fresh installation at that version.
func loadRulesFromMigrations(ctx context.Context, upTo uint64) ([]rules.Rule, error) {
	admin := os.Getenv("POSTGRES_ADMIN_URL")
	if admin == "" {
		return nil, errors.New("-rules migrations: POSTGRES_ADMIN_URL is not set (eval \"$(scripts/services.sh env)\")")
	}
	fsys, err := migrationsUpTo(upTo)
	if err != nil {
		return nil, err
	}
	adminDB, err := sql.Open("postgres", admin)
	if err != nil {
		return nil, err
	}
	defer adminDB.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "classifier_eval_" + hex.EncodeToString(b)
	if _, err := adminDB.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		return nil, fmt.Errorf("create scratch database: %w", err)
	}
	defer func() {
		_, _ = adminDB.ExecContext(context.WithoutCancel(ctx), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	}()
	u, err := url.Parse(admin)
	if err != nil {
		return nil, fmt.Errorf("POSTGRES_ADMIN_URL: %w", err)
	}
	u.Path = "/" + name
	log := slog.New(slog.DiscardHandler)
	if err := postgres.MigrateUp(u.String(), fsys, ".", log); err != nil {
		return nil, fmt.Errorf("migrate scratch database: %w", err)
	}
	// Before migration 007 the table has no min_keywords column, which the
	// repository reads: add it with its neutral value (the spec's threshold).
	db, err := sql.Open("postgres", u.String())
	if err != nil {
		return nil, err
	}
	_, err = db.ExecContext(ctx, `ALTER TABLE classification_rules ADD COLUMN IF NOT EXISTS min_keywords INTEGER NOT NULL DEFAULT 0`)
	_ = db.Close()
	if err != nil {
		return nil, fmt.Errorf("scratch database: %w", err)
	}
	return loadRulesFromDB(ctx, u.String())
}

// migrationsUpTo is the embedded migrations numbered up to upTo.
func migrationsUpTo(upTo uint64) (fs.FS, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return nil, err
	}
	out := fstest.MapFS{}
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		n, err := strconv.ParseUint(num, 10, 32)
		if !ok || err != nil || n > upTo {
			continue
		}
		data, err := fs.ReadFile(migrations.FS, e.Name())
		if err != nil {
			return nil, err
		}
		out[e.Name()] = &fstest.MapFile{Data: data}
	}
	return out, nil
}

func loadRulesFromFile(path string) ([]rules.Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list []rulestore.Rule
	if err := json.Unmarshal(data, &list); err != nil {
		var wrapped struct {
			Rules []rulestore.Rule `json:"rules"`
		}
		if err2 := json.Unmarshal(data, &wrapped); err2 != nil || wrapped.Rules == nil {
			return nil, fmt.Errorf("%s: want a JSON array of rules or {\"rules\": [...]}: %w", path, err)
		}
		list = wrapped.Rules
	}
	out := make([]rules.Rule, 0, len(list))
	for i, r := range list {
		if r.ID == 0 {
			r.ID = int64(i + 1)
		}
		out = append(out, r.EngineRule())
	}
	return out, nil
}

// parseInterspersed parses fl from args, flags before or after the
// positional arguments, which it returns.
func parseInterspersed(fl *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		if fl.NArg() == 0 {
			return files, nil
		}
		files = append(files, fl.Arg(0))
		args = fl.Args()[1:]
	}
}
