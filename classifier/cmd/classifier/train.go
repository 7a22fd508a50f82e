package main

// The train command: a topic model learned from labelled news.
//
//	classifier train [flags] LABELS.ndjson[.gz] ...
//
// It reads labelled documents ({"id", "label", "title", "text"}, the label a
// topic or a section name), scores the training by K-fold cross-validation
// (no document is scored by a model that learned from it), trains on all of
// them and writes the model to a file (-o) or stores it, inactive, in the
// classifier's database (-name), from where an operator shadows, rolls out,
// promotes and rolls it back (docs/classification.md).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/north-cloud/classifier/internal/labels"
	"github.com/north-cloud/classifier/internal/modelstore"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/topicmodel"
)

// TrainedOn is what a stored model records of its training.
type TrainedOn struct {
	Files     []string       `json:"files,omitempty"`
	Documents int            `json:"documents"`
	PerTopic  map[string]int `json:"per_topic"`
	Epochs    int            `json:"epochs"`
	L2        float64        `json:"l2"`
	Seed      uint64         `json:"seed"`
	Via       string         `json:"via"`
}

// CVScores are a model's figures on documents it did not learn from.
type CVScores struct {
	Folds    int             `json:"folds"`
	Top1     float64         `json:"top1"`
	Exact    float64         `json:"exact"`
	None     float64         `json:"none"`
	Sections []SectionScores `json:"sections"`
}

// SectionScores are one section's cross-validated figures.
type SectionScores struct {
	Section string  `json:"section"`
	Docs    int     `json:"docs"`
	Top1    float64 `json:"top1"`
	Exact   float64 `json:"exact"`
	None    float64 `json:"none"`
	Crime   float64 `json:"crime_flags"`
}

func cvScores(rep *SectionReport, folds int) CVScores {
	frac := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	t := rep.Total()
	out := CVScores{Folds: folds, Top1: frac(t.Top1, t.Docs), Exact: frac(t.Exact, t.Docs), None: frac(t.None, t.Docs)}
	for _, s := range rep.Sections {
		out.Sections = append(out.Sections, SectionScores{Section: s.Section, Docs: s.Docs,
			Top1: frac(s.Top1, s.Docs), Exact: frac(s.Exact, s.Docs), None: frac(s.None, s.Docs), Crime: frac(s.Crime, s.Docs)})
	}
	return out
}

// trainCommand is `classifier train`.
func trainCommand(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("train", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "usage: classifier train [flags] LABELS.ndjson[.gz] ...\n\n"+
			"Learns a topic model from labelled documents ({\"id\",\"label\",\"title\",\"text\"}; the label a topic or a\n"+
			"section name such as World or Sci/Tech), scores it by cross-validation, and writes it to a file (-o) or\n"+
			"stores it inactive in CLASSIFIER_DATABASE_URL (-name).\n\n")
		fl.PrintDefaults()
	}
	out := fl.String("o", "", "write the model as JSON to this file")
	name := fl.String("name", "", "store the model, inactive, under this name in the classifier's database (CLASSIFIER_DATABASE_URL)")
	cv := fl.Int("cv", 5, "score by K-fold cross-validation first (0: skip)")
	rulesFrom := fl.String("rules", "", "rules beside the model in the cross-validation: none, db, migrations or a JSON file (default: db with -name, none otherwise)")
	seed := fl.Uint64("seed", 1, "the seed of the folds and of training")
	fromLabels := fl.Bool("from-labels", false, "train on the operators' labels stored in CLASSIFIER_DATABASE_URL (the dashboard's Labelling page), besides any files")
	var cfg topicmodel.TrainConfig
	loadBase := trainFlags(fl, &cfg)
	files, err := parseInterspersed(fl, args)
	if err != nil {
		return err
	}
	if (len(files) == 0 && !*fromLabels) || (*out == "") == (*name == "") {
		fl.Usage()
		return errors.New("train: want labelled files or -from-labels, and exactly one of -o and -name")
	}
	cfg.Seed = *seed
	if err := loadBase(); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if *rulesFrom == "" {
		*rulesFrom = "none"
		if *name != "" {
			*rulesFrom = "db"
		}
	}
	var items []NewsItem
	for _, f := range files {
		its, err := readNews(f)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		items = append(items, its...)
	}
	if *fromLabels {
		stored, err := storedLabels(ctx)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		items = append(items, stored...)
		files = append(files, "labels")
	}
	examples := topicmodel.Examples(items)
	fmt.Fprintf(os.Stderr, "train: %d documents, per topic %v\n", len(examples), topicmodel.PerTopic(examples))

	var scores *CVScores
	if *cv > 0 {
		ruleSet, err := loadEvalRules(ctx, *rulesFrom)
		if err != nil {
			return fmt.Errorf("train: rules: %w", err)
		}
		engine, err := rules.NewEngineWithOptions(rules.DefaultOptions(), ruleSet)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		rep, err := crossValidate(ctx, engine, topicmodel.DecideConfig{}, items, *cv, cfg, os.Stderr)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		printSectionReport(os.Stdout, rep, fmt.Sprintf("%d-fold cross-validation, rules %s (%d)", *cv, *rulesFrom, engine.RuleCount()))
		s := cvScores(rep, *cv)
		scores = &s
	}
	cfg.Probed = func(done, total int) {
		fmt.Fprintf(os.Stderr, "train: choosing the lexicon's weight and the temperature, model %d/%d\n", done, total)
	}
	cfg.Progress = func(epoch, epochs int, loss float64) {
		fmt.Fprintf(os.Stderr, "train: pass %d/%d, mean loss %.4f\n", epoch, epochs, loss)
	}
	start := time.Now()
	m, err := topicmodel.Train(ctx, examples, cfg)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	fmt.Fprintf(os.Stderr, "train: %d terms, %d topics, temperature %.3g, lexicon weight %.3g, in %s\n",
		len(m.Terms), len(m.Topics), m.Temperature, m.BaseWeight, time.Since(start).Round(time.Millisecond))
	trained := TrainedOn{Files: files, Documents: len(examples), PerTopic: topicmodel.PerTopic(examples),
		Epochs: cfg.Epochs, L2: cfg.L2, Seed: cfg.Seed, Via: "classifier train"}
	if *out != "" {
		return writeModel(*out, m)
	}
	return storeModel(ctx, os.Stdout, modelstore.NewModel{Name: *name, Model: m, TrainedOn: trained, Scores: scores,
		CreatedBy: "classifier train"})
}

// storedLabels are the operators' labels (table topic_labels) as labelled
// documents.
func storedLabels(ctx context.Context) ([]NewsItem, error) {
	dsn := strings.TrimSpace(os.Getenv("CLASSIFIER_DATABASE_URL"))
	if dsn == "" {
		return nil, errors.New("-from-labels: CLASSIFIER_DATABASE_URL is not set")
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ex, err := labels.NewStore(db).Examples(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]NewsItem, len(ex))
	for i, e := range ex {
		out[i] = NewsItem{ID: fmt.Sprint("label-", i+1), Label: e.Label, Title: e.Title, Text: e.Body}
	}
	return out, nil
}

func writeModel(path string, m *topicmodel.Model) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	fmt.Fprintf(os.Stderr, "train: wrote %s (%d bytes)\n", path, len(data))
	return nil
}

func storeModel(ctx context.Context, w io.Writer, in modelstore.NewModel) error {
	dsn := strings.TrimSpace(os.Getenv("CLASSIFIER_DATABASE_URL"))
	if dsn == "" {
		return errors.New("train: -name: CLASSIFIER_DATABASE_URL is not set")
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	defer db.Close()
	s, err := modelstore.NewRepository(db).Create(ctx, in)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	fmt.Fprintf(w, "stored model %d %q (inactive): %d terms, topics %v\n"+
		"shadow it:   POST /api/v1/models/%d/candidate {\"rollout_percent\": 0}\n"+
		"promote it:  POST /api/v1/models/%d/promote\n", s.ID, s.Name, s.Terms, s.Topics, s.ID, s.ID)
	return nil
}
