package rulestore_test

import (
	"database/sql"
	"errors"
	"slices"
	"testing"

	"github.com/north-cloud/classifier/internal/rulestore"
)

func TestRepositoryCRUD(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	clearRules(t, b.db)

	created, err := b.repo.Create(ctx, validInput(" Shootings "))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if created.ID <= 0 || created.Name != "Shootings" || !created.Enabled || created.Seed != "" ||
		created.CreatedAt.IsZero() || !slices.Equal(created.Keywords, []string{"shooting", "stabbing", "homicide"}) {
		t.Fatalf("created = %+v", created)
	}

	got, err := b.repo.Get(ctx, created.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Name != created.Name || got.MinConfidence != 0.2 || got.Priority != 10 {
		t.Errorf("Get = %+v, want %+v", got, created)
	}

	in := validInput("Shootings and stabbings")
	in.Topic = "violent_crime"
	in.Keywords = []string{"shooting", "stabbing"}
	in.MinConfidence, in.Priority, in.Enabled = 0.5, 7, false
	updated, err := b.repo.Update(ctx, created.ID, in)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if updated.Name != in.Name || updated.Enabled || updated.Priority != 7 || len(updated.Keywords) != 2 ||
		!updated.UpdatedAt.After(created.UpdatedAt) && !updated.UpdatedAt.Equal(created.UpdatedAt) {
		t.Errorf("updated = %+v", updated)
	}

	if created.MinKeywords != 0 || updated.MinKeywords != 0 {
		t.Errorf("min_keywords without a value: created %d, updated %d, want 0", created.MinKeywords, updated.MinKeywords)
	}
	// min_keywords is set when given and kept by an Update that does not
	// name it (a client that predates the field), capped at the keywords.
	two := 2
	in.MinKeywords = &two
	if updated, err = b.repo.Update(ctx, created.ID, in); err != nil || updated.MinKeywords != 2 {
		t.Fatalf("Update min_keywords 2 = %+v, %v", updated, err)
	}
	in.MinKeywords = nil
	if updated, err = b.repo.Update(ctx, created.ID, in); err != nil || updated.MinKeywords != 2 {
		t.Fatalf("Update without min_keywords = %+v, %v; want it kept", updated, err)
	}
	in.Keywords = []string{"shooting"}
	if updated, err = b.repo.Update(ctx, created.ID, in); err != nil || updated.MinKeywords != 1 {
		t.Fatalf("Update to one keyword = %+v, %v; want min_keywords capped at 1", updated, err)
	}
	if loaded, _, err := b.repo.LoadEnabled(ctx); err != nil || len(loaded) != 0 {
		t.Fatalf("LoadEnabled with the rule disabled = %+v, %v", loaded, err)
	}
	three := 3
	created2, err := b.repo.Create(ctx, rulestore.Input{Name: "three", Topic: "t", Keywords: []string{"a", "b", "c"}, MinKeywords: &three, Enabled: true})
	if err != nil || created2.MinKeywords != 3 {
		t.Fatalf("Create with min_keywords = %+v, %v", created2, err)
	}
	if loaded, _, err := b.repo.LoadEnabled(ctx); err != nil || len(loaded) != 1 || loaded[0].MinKeywords != 3 {
		t.Fatalf("LoadEnabled = %+v, %v; want min_keywords 3 in the engine rule", loaded, err)
	}

	enabled, err := b.repo.SetEnabled(ctx, created.ID, true)
	if err != nil || !enabled.Enabled {
		t.Fatalf("SetEnabled(true) = %+v, %v", enabled, err)
	}
	disabled, err := b.repo.SetEnabled(ctx, created.ID, false)
	if err != nil || disabled.Enabled {
		t.Fatalf("SetEnabled(false) = %+v, %v", disabled, err)
	}

	if err := b.repo.Delete(ctx, created.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := b.repo.Get(ctx, created.ID); !errors.Is(err, rulestore.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
}

func TestRepositoryErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	clearRules(t, b.db)
	first, err := b.repo.Create(ctx, validInput("taken"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.repo.Create(ctx, validInput("other"))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"create duplicate name", func() error { _, err := b.repo.Create(ctx, validInput("taken")); return err }, rulestore.ErrConflict},
		{"rename onto taken name", func() error { _, err := b.repo.Update(ctx, second.ID, validInput("taken")); return err }, rulestore.ErrConflict},
		{"create invalid", func() error {
			in := validInput("bad")
			in.Keywords = []string{"gun", "GUN"}
			_, err := b.repo.Create(ctx, in)
			return err
		}, rulestore.ErrInvalid},
		{"update invalid", func() error {
			in := validInput("taken")
			in.MinConfidence = 3
			_, err := b.repo.Update(ctx, first.ID, in)
			return err
		}, rulestore.ErrInvalid},
		{"get missing", func() error { _, err := b.repo.Get(ctx, 999999); return err }, rulestore.ErrNotFound},
		{"update missing", func() error { _, err := b.repo.Update(ctx, 999999, validInput("x")); return err }, rulestore.ErrNotFound},
		{"delete missing", func() error { return b.repo.Delete(ctx, 999999) }, rulestore.ErrNotFound},
		{"enable missing", func() error { _, err := b.repo.SetEnabled(ctx, 999999, true); return err }, rulestore.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRepositoryList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	clearRules(t, b.db)
	mk := func(name, topic string, priority int, enabled bool) {
		in := validInput(name)
		in.Topic, in.Priority, in.Enabled = topic, priority, enabled
		if _, err := b.repo.Create(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	mk("b-sports", "sports", 5, true)
	mk("a-sports", "sports", 5, false)
	mk("crime", "violent_crime", 100, true)
	mk("weather", "weather", 1, false)

	yes, no := true, false
	tests := []struct {
		name   string
		filter rulestore.Filter
		want   []string
	}{
		{"all, by priority then name", rulestore.Filter{}, []string{"crime", "a-sports", "b-sports", "weather"}},
		{"topic", rulestore.Filter{Topic: "sports"}, []string{"a-sports", "b-sports"}},
		{"enabled", rulestore.Filter{Enabled: &yes}, []string{"crime", "b-sports"}},
		{"disabled", rulestore.Filter{Enabled: &no}, []string{"a-sports", "weather"}},
		{"topic and enabled", rulestore.Filter{Topic: "sports", Enabled: &no}, []string{"a-sports"}},
		{"no match", rulestore.Filter{Topic: "nothing"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := b.repo.List(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, r := range list {
				names = append(names, r.Name)
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("List = %v, want %v", names, tt.want)
			}
		})
	}
}

// TestRepositoryVersion checks the rule-set version that Watchers reload on:
// it moves with every statement that changes a rule, including deletes and
// direct SQL, and not with writes that change nothing.
func TestRepositoryVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	version := func() int64 {
		t.Helper()
		v, err := b.repo.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v0 := version()
	rule, err := b.repo.Create(ctx, validInput("versioned"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := version()
	if v1 <= v0 {
		t.Fatalf("create: version %d -> %d", v0, v1)
	}
	if _, err := b.repo.SetEnabled(ctx, rule.ID, true); err != nil { // already enabled
		t.Fatal(err)
	}
	if v := version(); v != v1 {
		t.Errorf("no-op enable moved the version %d -> %d", v1, v)
	}
	if _, err := b.db.ExecContext(ctx, `UPDATE classification_rules SET priority = 3 WHERE id = -1`); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != v1 {
		t.Errorf("update of no row moved the version %d -> %d", v1, v)
	}
	if _, err := b.db.ExecContext(ctx, `UPDATE classification_rules SET priority = 3 WHERE id = $1`, rule.ID); err != nil {
		t.Fatal(err)
	}
	v2 := version()
	if v2 <= v1 {
		t.Errorf("psql update: version %d -> %d", v1, v2)
	}
	if err := b.repo.Delete(ctx, rule.ID); err != nil {
		t.Fatal(err)
	}
	v3 := version()
	if v3 <= v2 {
		t.Errorf("delete: version %d -> %d", v2, v3)
	}

	rs, loadedVersion, err := b.repo.LoadEnabled(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if loadedVersion != v3 {
		t.Errorf("LoadEnabled version = %d, want %d", loadedVersion, v3)
	}
	for _, r := range rs {
		if !r.Enabled || r.ID == rule.ID {
			t.Errorf("LoadEnabled returned %+v", r)
		}
	}
}

func TestRepositoryUpdatedAtFollowsUpdates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	rule, err := b.repo.Create(ctx, validInput("timestamps"))
	if err != nil {
		t.Fatal(err)
	}
	// Push created_at/updated_at into the past so the trigger's now() is
	// visibly later.
	if _, err := b.db.ExecContext(ctx, `UPDATE classification_rules SET created_at = created_at - interval '1 hour' WHERE id = $1`, rule.ID); err != nil {
		t.Fatal(err)
	}
	before, err := b.repo.Get(ctx, rule.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.ExecContext(ctx, `UPDATE classification_rules SET updated_at = updated_at - interval '1 hour', priority = 1 WHERE id = $1`, rule.ID); err != nil {
		t.Fatal(err)
	}
	after, err := b.repo.Get(ctx, rule.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.UpdatedAt.Before(before.UpdatedAt) {
		t.Errorf("updated_at went back from %v to %v: the touch trigger did not run", before.UpdatedAt, after.UpdatedAt)
	}
}

func TestRepositoryUnavailable(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: every call fails to connect.
	db, err := sql.Open("postgres", "postgres://nobody:nothing@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	repo := rulestore.NewRepository(db)
	ctx := testContext(t)
	if _, err := repo.List(ctx, rulestore.Filter{}); !errors.Is(err, rulestore.ErrUnavailable) {
		t.Errorf("List error = %v, want ErrUnavailable", err)
	}
	if _, err := repo.Create(ctx, validInput("x")); !errors.Is(err, rulestore.ErrUnavailable) {
		t.Errorf("Create error = %v, want ErrUnavailable", err)
	}
	if _, _, err := repo.LoadEnabled(ctx); !errors.Is(err, rulestore.ErrUnavailable) {
		t.Errorf("LoadEnabled error = %v, want ErrUnavailable", err)
	}
}
