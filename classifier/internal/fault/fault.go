// Package fault is the classifier's view of the one fault policy of every
// service (github.com/north-cloud/infrastructure/fault): it classifies every
// error the classifier meets, once and in one place, by what caused it, and
// names the dead-letter code each kind of fault gets:
//
//   - Document: this document can never succeed as it is (validation, size,
//     encoding, a mapping that refuses its value). It goes to the
//     dead-letter queue as VALIDATION_ERROR with no retries. Of a Postgres
//     statement, this kind means only that the statement's data was
//     refused: the committer bisects down to the row, and RowCode names the
//     row's fault.
//   - Dependency: Elasticsearch or a Postgres database is unavailable,
//     refuses our credentials, or is overloaded. The dependency's circuit
//     breaker opens and the work that needs it pauses; no document is
//     charged a retry.
//   - Transient: a time-out or conflict on one item. That item is retried
//     with backoff through the dead-letter queue.
//   - Ambiguous: a Postgres error that does not tell; Proved settles it
//     with a probe of the database.
package fault

import (
	"context"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/fault"
)

// Kind is what caused a fault (the shared fault.Kind).
type Kind = fault.Kind

// Kinds of faults.
const (
	Transient  = fault.Transient
	Document   = fault.Statement
	Dependency = fault.Dependency
	Ambiguous  = fault.Ambiguous
)

// Probe is a cheap check of a dependency (fault.Probe).
type Probe = fault.Probe

// Code is the dead-letter error code for a fault of kind k met while using
// Elasticsearch (elastic) or a Postgres database.
func Code(k Kind, elastic bool, err error) domain.ErrorCode {
	switch {
	case k == Document:
		return domain.ErrorCodeValidation
	case elastic && fault.IsTimeout(err):
		return domain.ErrorCodeESTimeout
	case elastic:
		return domain.ErrorCodeESUnavailable
	default:
		return domain.ErrorCodeDB
	}
}

// RowCode is the dead-letter code of one row that a Postgres statement
// refused on its own: VALIDATION_ERROR for data it can never store as it is
// (class 22 or 23, a value the driver cannot encode), DB_ERROR, retried
// with backoff, for any other error of the statement (a trigger's
// exception, a row touched twice, an internal error).
func RowCode(err error) domain.ErrorCode {
	if fault.PostgresInvalid(err) {
		return domain.ErrorCodeValidation
	}
	return domain.ErrorCodeDB
}

// ElasticsearchProved classifies an error of a whole Elasticsearch request
// and, when it does not tell (our own deadline passed), asks probe whether
// the cluster answers (fault.ElasticsearchProved): it never answers
// Ambiguous.
func ElasticsearchProved(ctx context.Context, err error, probe Probe) Kind {
	return fault.ElasticsearchProved(ctx, err, probe)
}

// ElasticsearchItem classifies the error of one item of a bulk request
// (fault.ElasticsearchItem).
func ElasticsearchItem(status int, body string) Kind { return fault.ElasticsearchItem(status, body) }

// IsBlock reports a cluster or index block (a write block, a read-only
// index, the disk flood stage) in an Elasticsearch error (fault.IsBlock).
func IsBlock(body string) bool { return fault.IsBlock(body) }

// Postgres classifies an error of a Postgres statement from the error alone
// (fault.Postgres); it may answer Ambiguous.
func Postgres(err error) Kind { return fault.Postgres(err) }

// Proved classifies an error of a Postgres statement and, when the error
// does not tell, asks probe whether the database answers
// (fault.PostgresProved): it never answers Ambiguous.
func Proved(ctx context.Context, err error, probe Probe) Kind {
	return fault.PostgresProved(ctx, err, probe)
}
