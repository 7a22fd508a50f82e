package rulestore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
)

// A rule's effect goes through the repository and into the engine's rules:
// a rule created without one supports its topic, an exclude rule may name
// the crime family, an Update without an effect keeps the rule's (and must
// still suit its topic), and Postgres refuses an unknown effect written in
// psql.
func TestRepositoryEffect(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	clearRules(t, b.db)

	plain, err := b.repo.Create(ctx, validInput("plain"))
	if err != nil || plain.Effect != rules.EffectSupport {
		t.Fatalf("Create without an effect = %+v, %v; want support", plain, err)
	}
	in := validInput("Sports and games context")
	in.Topic, in.Keywords, in.Effect = rules.CrimeFamily, []string{"match", "striker", "video game"}, effect(rules.EffectExclude)
	veto, err := b.repo.Create(ctx, in)
	if err != nil || veto.Effect != rules.EffectExclude || veto.Topic != rules.CrimeFamily {
		t.Fatalf("Create an exclude rule for crime = %+v, %v", veto, err)
	}
	if got, err := b.repo.Get(ctx, veto.ID); err != nil || got.Effect != rules.EffectExclude {
		t.Fatalf("Get = %+v, %v; want exclude", got, err)
	}

	// An Update that does not name the effect keeps it (a client that
	// predates the field never turns a veto into support).
	in.Effect = nil
	in.Keywords = append(in.Keywords, "derby")
	updated, err := b.repo.Update(ctx, veto.ID, in)
	if err != nil || updated.Effect != rules.EffectExclude || len(updated.Keywords) != 4 {
		t.Fatalf("Update without an effect = %+v, %v; want exclude kept", updated, err)
	}
	over := validInput("plain")
	over.Effect = effect(rules.EffectOverride)
	if updated, err := b.repo.Update(ctx, plain.ID, over); err != nil || updated.Effect != rules.EffectOverride {
		t.Fatalf("Update to override = %+v, %v", updated, err)
	}

	loaded, _, err := b.repo.LoadEnabled(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]rules.Effect{}
	for _, r := range loaded {
		got[r.Name] = r.Effect
	}
	if got["plain"] != rules.EffectOverride || got["Sports and games context"] != rules.EffectExclude {
		t.Fatalf("LoadEnabled effects = %v", got)
	}
	e, err := rules.NewEngine("", loaded)
	if err != nil {
		t.Fatal(err)
	}
	if ms := e.Match("", "the striker's match"); len(ms) != 1 || ms[0].Rule.Effect != rules.EffectExclude {
		t.Errorf("the engine's match = %+v, want the exclude rule with its effect", ms)
	}

	for name, tc := range map[string]struct {
		call func() error
		msg  string
	}{
		"unknown effect": {func() error {
			in := validInput("bad effect")
			in.Effect = effect("veto")
			_, err := b.repo.Create(ctx, in)
			return err
		}, "effect: must be one of"},
		"crime family without an effect": {func() error {
			in := validInput("crime support")
			in.Topic = rules.CrimeFamily
			_, err := b.repo.Create(ctx, in)
			return err
		}, "allowed only with effect exclude (got support)"},
		"crime family veto made support": {func() error {
			in := validInput("Sports and games context")
			in.Topic, in.Effect = rules.CrimeFamily, effect(rules.EffectSupport)
			_, err := b.repo.Update(ctx, veto.ID, in)
			return err
		}, "allowed only with effect exclude"},
		"renamed to crime keeping support": {func() error {
			in := validInput("plain")
			in.Topic = rules.CrimeFamily
			_, err := b.repo.Update(ctx, plain.ID, in)
			return err
		}, "allowed only with effect exclude (got override)"},
	} {
		err := tc.call()
		if !errors.Is(err, rulestore.ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrInvalid with %q", name, err, tc.msg)
		}
	}
	if _, err := b.repo.Update(ctx, 999999, validInput("nobody")); !errors.Is(err, rulestore.ErrNotFound) {
		t.Errorf("Update of a missing rule without an effect: %v, want ErrNotFound", err)
	}
	if _, err := b.db.ExecContext(ctx, `UPDATE classification_rules SET effect = 'veto' WHERE id = $1`, plain.ID); err == nil ||
		!strings.Contains(err.Error(), "classification_rules_effect_check") {
		t.Errorf("psql effect 'veto': %v, want the check constraint", err)
	}
}
