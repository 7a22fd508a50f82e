package modelstore_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/modelstore"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/testenv"
)

// lexiconModel is a small model that calls every document topic.
func lexiconModel(t *testing.T, topic string) *topicmodel.Model {
	t.Helper()
	m, err := topicmodel.ParseLexicon(strings.NewReader("[" + topic + "]\n3 the\n[other]\n1 zzz\n"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type bundle struct {
	repo   *modelstore.Repository
	rules  *rulestore.Repository
	models *modelstore.Models
	engine *rules.Engine
	re     *modelstore.Reloader
	db     *sql.DB
	dbURL  string
}

func setup(t *testing.T) bundle {
	t.Helper()
	db, url := dbtest.Migrated(t)
	def, err := pipeline.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	models, err := modelstore.NewModels(def, rules.MatcherKindDefault)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := rules.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bundle{repo: modelstore.NewRepository(db), rules: rulestore.NewRepository(db), models: models, engine: engine, db: db, dbURL: url}
	b.re = &modelstore.Reloader{Rules: b.rules, Target: engine, Repo: b.repo, Models: models, Logger: testenv.Logger(t)}
	return b
}

// reload runs one watcher reload by hand: load, then update.
func (b bundle) reload(t *testing.T) {
	t.Helper()
	rs, _, err := b.re.LoadEnabled(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.re.Update(rs); err != nil {
		t.Fatal(err)
	}
}

func (b bundle) create(t *testing.T, name, topic string) modelstore.Summary {
	t.Helper()
	s, err := b.repo.Create(t.Context(), modelstore.NewModel{Name: name, Model: lexiconModel(t, topic),
		TrainedOn: map[string]int{"documents": 2}, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decides names the topic the model serving document id decides.
func decides(t *testing.T, m *modelstore.Models, id string) (string, string) {
	t.Helper()
	d, s := m.For("news_raw_content", id)
	name := func(x *topicmodel.Scorer) string {
		if x == nil {
			return ""
		}
		return x.Topics()[0]
	}
	return name(d), name(s)
}

func TestCreateLoadRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.create(t, "first", "sports")
	if s.Status != modelstore.StatusInactive || s.Terms != 2 || !slices.Equal(s.Topics, []string{"sports", "other"}) || s.CreatedBy != "test" {
		t.Fatalf("summary %+v", s)
	}
	m, err := b.repo.Load(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := lexiconModel(t, "sports"); !slices.Equal(m.Body, want.Body) || !slices.Equal(m.Terms, want.Terms) {
		t.Errorf("loaded %+v, want %+v", m, want)
	}
	list, err := b.repo.List(t.Context())
	if err != nil || len(list) != 1 || list[0].ID != s.ID {
		t.Fatalf("list %+v, %v", list, err)
	}
	if _, err := b.repo.Create(t.Context(), modelstore.NewModel{Name: " ", Model: lexiconModel(t, "x")}); !errors.Is(err, modelstore.ErrInvalid) {
		t.Errorf("blank name: %v", err)
	}
	bad := lexiconModel(t, "x")
	bad.Bias = nil
	if _, err := b.repo.Create(t.Context(), modelstore.NewModel{Name: "bad", Model: bad}); !errors.Is(err, modelstore.ErrInvalid) {
		t.Errorf("broken model: %v", err)
	}
	if _, err := b.repo.Get(t.Context(), 999999); !errors.Is(err, modelstore.ErrNotFound) {
		t.Errorf("get missing: %v", err)
	}
}

// A trained model is shadowed, rolled out by percentage, promoted and
// rolled back, and each step reaches the pipeline's models.
func TestShadowRolloutPromoteRollback(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	first, second := b.create(t, "first", "sports"), b.create(t, "second", "business")
	b.reload(t)
	if got, shadow := decides(t, b.models, "a"); got == "sports" || got == "business" || shadow != "" {
		t.Fatalf("nothing in use: decided by %q, shadow %q; want the lexicon alone", got, shadow)
	}

	// Shadow: the candidate is scored beside the lexicon and decides nothing.
	if _, err := b.repo.SetCandidate(ctx, first.ID, 0); err != nil {
		t.Fatal(err)
	}
	b.reload(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		if got, shadow := decides(t, b.models, id); got == "sports" || shadow != "sports" {
			t.Fatalf("shadow: document %s decided by %q, shadow %q", id, got, shadow)
		}
	}

	// Rollout: the candidate decides the documents of its buckets.
	if _, err := b.repo.SetCandidate(ctx, first.ID, 30); err != nil {
		t.Fatal(err)
	}
	b.reload(t)
	byCandidate := 0
	for i := range 1000 {
		id := strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()
		got, shadow := decides(t, b.models, id)
		inRollout := rules.RolloutBucket("news_raw_content", id) < 30
		if inRollout != (got == "sports") || (got == "sports") == (shadow == "sports") {
			t.Fatalf("document %s (bucket %d): decided by %q, shadow %q", id, rules.RolloutBucket("news_raw_content", id), got, shadow)
		}
		if got == "sports" {
			byCandidate++
		}
	}
	if byCandidate < 200 || byCandidate > 400 {
		t.Errorf("the 30%% candidate decided %d of 1000 documents", byCandidate)
	}
	if u := b.models.InUse(); u.Candidate != first.ID || u.RolloutPercent != 30 || u.Active != 0 {
		t.Errorf("in use %+v", u)
	}

	// Promote: the candidate is active and decides everything.
	if s, err := b.repo.Promote(ctx, first.ID); err != nil || s.Status != modelstore.StatusActive || s.RolloutPercent != 0 {
		t.Fatalf("promote: %+v, %v", s, err)
	}
	b.reload(t)
	if got, shadow := decides(t, b.models, "a"); got != "sports" || shadow != "" {
		t.Fatalf("promoted: decided by %q, shadow %q", got, shadow)
	}
	if _, err := b.repo.SetCandidate(ctx, first.ID, 10); !errors.Is(err, modelstore.ErrConflict) {
		t.Errorf("the active model as candidate: %v, want ErrConflict", err)
	}
	if err := b.repo.Delete(ctx, first.ID); !errors.Is(err, modelstore.ErrConflict) {
		t.Errorf("delete the active model: %v, want ErrConflict", err)
	}

	// A second promotion retires the first.
	if _, err := b.repo.Promote(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	b.reload(t)
	if got, _ := decides(t, b.models, "a"); got != "business" {
		t.Fatalf("second promoted: decided by %q", got)
	}
	if s, _ := b.repo.Get(ctx, first.ID); s.Status != modelstore.StatusRetired {
		t.Errorf("first after the second's promotion: %s, want retired", s.Status)
	}

	// Rollback, in one call: the retired first model decides again.
	now, err := b.repo.Rollback(ctx)
	if err != nil || now == nil || now.ID != first.ID {
		t.Fatalf("rollback: %+v, %v", now, err)
	}
	b.reload(t)
	if got, _ := decides(t, b.models, "a"); got != "sports" {
		t.Fatalf("rolled back: decided by %q, want the first model", got)
	}
	// Rolling back again leaves no active model: the lexicon decides.
	if now, err := b.repo.Rollback(ctx); err != nil || now != nil {
		t.Fatalf("second rollback: %+v, %v, want the lexicon", now, err)
	}
	b.reload(t)
	if got, _ := decides(t, b.models, "a"); got == "sports" || got == "business" {
		t.Fatalf("after both rollbacks: decided by %q, want the lexicon", got)
	}
	if _, err := b.repo.Rollback(ctx); !errors.Is(err, modelstore.ErrNotFound) {
		t.Errorf("rollback with nothing active: %v, want ErrNotFound", err)
	}
	if err := b.repo.Delete(ctx, second.ID); err != nil {
		t.Errorf("delete an inactive model: %v", err)
	}
	if _, err := b.repo.ClearCandidate(ctx); !errors.Is(err, modelstore.ErrNotFound) {
		t.Errorf("clear with no candidate: %v", err)
	}
}

// A model status change reaches a running replica by itself: the change
// bumps the rule-set version, and the rule watcher reloads models with the
// rules.
func TestWatcherReloadsModels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := rulestore.NewWatcher(rulestore.WatcherConfig{DatabaseURL: b.dbURL}, b.re, b.re, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(context.WithoutCancel(ctx)) }()
	m := b.create(t, "hot", "sports")
	if _, err := b.repo.Promote(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	for b.models.InUse().Active != m.ID {
		select {
		case <-ctx.Done():
			t.Fatalf("the promoted model never reached the replica: %+v", b.models.InUse())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if got, _ := decides(t, b.models, "a"); got != "sports" {
		t.Errorf("decided by %q after the reload", got)
	}
	if _, err := b.repo.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for b.models.InUse().Active != 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the rollback never reached the replica: %+v", b.models.InUse())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestUnusableModelKeepsTheOneInUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	var unusable []int64
	b.re.OnUnusable = func(id int64, err error) {
		if err == nil {
			t.Error("OnUnusable without an error")
		}
		unusable = append(unusable, id)
	}
	good, bad := b.create(t, "good", "sports"), b.create(t, "bad", "business")
	if _, err := b.repo.SetCandidate(ctx, good.ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.repo.Promote(ctx, good.ID); err != nil {
		t.Fatal(err)
	}
	b.reload(t)
	// The stored bytes of the other model go bad (a bad restore, a hand
	// edit); it is made the candidate beside the good one.
	if _, err := b.db.ExecContext(ctx, `UPDATE topic_models SET model = 'not gzip' WHERE id = $1`, bad.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.repo.SetCandidate(ctx, bad.ID, 100); err != nil {
		t.Fatal(err)
	}
	b.reload(t)
	if !slices.Equal(unusable, []int64{bad.ID}) {
		t.Fatalf("unusable models reported %v, want [%d]", unusable, bad.ID)
	}
	for _, id := range []string{"a", "b", "c"} {
		if got, shadow := decides(t, b.models, id); got != "sports" || shadow != "" {
			t.Fatalf("document %s decided by %q, shadow %q; want the good model alone", id, got, shadow)
		}
	}
}
