package modelstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/topicmodel"
)

// Models serves the topic models in use: the active model (the shipped
// lexicon when none is active) and the candidate. Safe for concurrent use;
// a reload swaps one immutable state in.
type Models struct {
	def   *topicmodel.Scorer
	kind  rules.MatcherKind
	state atomic.Pointer[state]
}

type state struct {
	active, candidate *loaded // nil: none
	percent           int
}

type loaded struct {
	id     int64
	scorer *topicmodel.Scorer
}

// NewModels serves def (the shipped lexicon) until a reload finds a model
// in use; kind is the matcher trained models are compiled with.
func NewModels(def *topicmodel.Scorer, kind rules.MatcherKind) (*Models, error) {
	if def == nil {
		return nil, errors.New("new models: the default model is required")
	}
	m := &Models{def: def, kind: kind}
	m.state.Store(&state{})
	return m, nil
}

// For returns the model that decides the document (index, id) and the one
// scored beside it in shadow (nil when there is no candidate): the
// candidate decides the documents of its rollout share
// (rules.RolloutBucket below the percentage), the active model the others.
func (m *Models) For(index, id string) (decides, shadow *topicmodel.Scorer) {
	st := m.state.Load()
	active := m.def
	if st.active != nil {
		active = st.active.scorer
	}
	if st.candidate == nil {
		return active, nil
	}
	if rules.RolloutBucket(index, id) < st.percent {
		return st.candidate.scorer, active
	}
	return active, st.candidate.scorer
}

// InUse is the ids of the models served (0: none) and the rollout share.
func (m *Models) InUse() InUse {
	st := m.state.Load()
	var u InUse
	if st.active != nil {
		u.Active = st.active.id
	}
	if st.candidate != nil {
		u.Candidate, u.RolloutPercent = st.candidate.id, st.percent
	}
	return u
}

// Reloader loads the models in use with every rule reload of a
// rulestore.Watcher: it is the watcher's Loader (rules, then models) and
// its Updater (rules, then models swapped in). A model's status change
// bumps the rule-set version (migration 019's triggers), so it reaches every
// replica the way a rule edit does, with the watcher's retries: a model that
// cannot be read fails the load as a database error and is tried again at
// the next poll. A stored model that does not decode or compile is logged
// and left out; the model it would replace stays in use.
type Reloader struct {
	Rules  rulestore.Loader
	Target rulestore.Updater
	Repo   *Repository
	Models *Models
	Logger *slog.Logger
	// OnUnusable, when set, is told of each reload that found a model in
	// use (active or candidate) that cannot be read or compiled; the model
	// loaded before stays in its place.
	OnUnusable func(id int64, err error)

	mu      sync.Mutex
	pending *state
}

// Version is the rule-set version (models included).
func (r *Reloader) Version(ctx context.Context) (int64, error) { return r.Rules.Version(ctx) }

// LoadEnabled loads the enabled rules and the models in use.
func (r *Reloader) LoadEnabled(ctx context.Context) ([]rules.Rule, int64, error) {
	rs, version, err := r.Rules.LoadEnabled(ctx)
	if err != nil {
		return nil, 0, err
	}
	st, err := r.load(ctx)
	if err != nil {
		return nil, 0, err
	}
	r.mu.Lock()
	r.pending = st
	r.mu.Unlock()
	return rs, version, nil
}

// Update hands the rules to the engine, then swaps the models loaded with
// them in.
func (r *Reloader) Update(rs []rules.Rule) error {
	if err := r.Target.Update(rs); err != nil {
		return err
	}
	r.mu.Lock()
	st := r.pending
	r.pending = nil
	r.mu.Unlock()
	if st != nil {
		r.Models.state.Store(st)
	}
	return nil
}

// load reads which models are in use and loads those not already loaded.
func (r *Reloader) load(ctx context.Context) (*state, error) {
	u, err := r.Repo.InUse(ctx)
	if err != nil {
		return nil, err
	}
	cur := r.Models.state.Load()
	st := &state{percent: u.RolloutPercent}
	if st.active, err = r.slot(ctx, u.Active, cur.active, cur.candidate); err != nil {
		return nil, err
	}
	if st.candidate, err = r.slot(ctx, u.Candidate, cur.candidate, cur.active); err != nil {
		return nil, err
	}
	if st.candidate == nil {
		st.percent = 0
	}
	return st, nil
}

// slot is model id, reused from either loaded model when it is one of them.
func (r *Reloader) slot(ctx context.Context, id int64, was, other *loaded) (*loaded, error) {
	switch {
	case id == 0:
		return nil, nil
	case was != nil && was.id == id:
		return was, nil
	case other != nil && other.id == id:
		return other, nil
	}
	m, err := r.Repo.Load(ctx, id)
	if err == nil {
		var s *topicmodel.Scorer
		if s, err = topicmodel.Compile(m, r.Models.kind); err == nil {
			return &loaded{id: id, scorer: s}, nil
		}
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotFound) || ctx.Err() != nil {
		return nil, fmt.Errorf("load topic model %d: %w", id, err)
	}
	r.Logger.ErrorContext(ctx, "stored topic model unusable; keeping the model in use",
		slog.Int64("model_id", id), slog.Any("error", err))
	if r.OnUnusable != nil {
		r.OnUnusable(id, err)
	}
	return was, nil
}
