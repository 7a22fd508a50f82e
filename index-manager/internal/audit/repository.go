// Package audit is the index-manager's side of the shared audit log
// (infrastructure/audit): the actions its index operations record and the
// names its code and tests use for the shared types. Index operations
// write a pending entry before they reach Elasticsearch (Begin) and finish
// it after, so no index changes unrecorded.
package audit

import (
	"database/sql"

	shared "github.com/north-cloud/infrastructure/audit"
)

// Actions recorded by the index operations.
const (
	ActionCreate     = "create"
	ActionDelete     = "delete"
	ActionRefresh    = "refresh"
	ActionAlias      = "alias"
	ActionUnalias    = "unalias"
	ActionForceMerge = "forcemerge"
	// ActionSilence and ActionExpireSilence are the Alertmanager silences
	// the dashboard server sets and expires (POST /api/v1/audit/silences),
	// target the alert name.
	ActionSilence       = "silence"
	ActionExpireSilence = "expire_silence"
)

// Actions lists the actions, the values the list endpoint's action filter
// takes.
func Actions() []string {
	return []string{ActionCreate, ActionDelete, ActionRefresh, ActionAlias, ActionUnalias, ActionForceMerge, ActionSilence, ActionExpireSilence}
}

// Outcomes and bounds of the shared log.
const (
	OutcomePending = shared.OutcomePending
	OutcomeSuccess = shared.OutcomeSuccess
	OutcomeFailure = shared.OutcomeFailure

	ListLimitMax       = shared.ListLimitMax
	MaxParametersBytes = shared.MaxParametersBytes
	MaxErrorBytes      = shared.MaxErrorBytes
	MaxEntryBytes      = shared.MaxEntryBytes
	MaxPageBytes       = shared.MaxPageBytes
)

type (
	// Entry is one audit log row.
	Entry = shared.Entry
	// Filter selects entries (Target is the index).
	Filter = shared.Filter
	// Repository is the audit log in the index-manager's database.
	Repository = shared.Store
)

// NewRepository returns the audit log over db (migrated by the service).
func NewRepository(db *sql.DB) (*Repository, error) { return shared.NewStore(db) }

// SafeActor is the form an actor is stored and listed in
// (infrastructure/audit.SafeActor).
func SafeActor(actor string) string { return shared.SafeActor(actor) }
