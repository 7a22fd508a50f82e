package processor

import (
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/fault"
)

// The committer classifies every error it meets once, with the one fault
// policy of every service (package fault of infrastructure), and names the
// dead-letter code each fault gets here:
//
//   - Statement: this document can never succeed as it is (validation,
//     size, encoding, a mapping that refuses its value): VALIDATION_ERROR,
//     no retries. Of a Postgres statement, it means only that the
//     statement's data was refused: the committer bisects down to the row
//     (isolate), and rowCode names the row's fault.
//   - Dependency: Elasticsearch or a Postgres database is unavailable,
//     refuses our credentials, or is overloaded. Its breaker opens and the
//     batch is held; no document is charged a retry, so no code is given.
//   - Transient: a time-out or conflict on one item, retried with backoff
//     through the dead-letter queue.

// faultCode is the dead-letter code for a fault of kind k met while using
// Elasticsearch (elastic) or a Postgres database.
func faultCode(k fault.Kind, elastic bool, err error) domain.ErrorCode {
	switch {
	case k == fault.Statement:
		return domain.ErrorCodeValidation
	case elastic && fault.IsTimeout(err):
		return domain.ErrorCodeESTimeout
	case elastic:
		return domain.ErrorCodeESUnavailable
	default:
		return domain.ErrorCodeDB
	}
}

// rowCode is the dead-letter code of one row that a Postgres statement
// refused on its own: VALIDATION_ERROR for data it can never store as it is
// (class 22 or 23, a value the driver cannot encode), DB_ERROR, retried
// with backoff, for any other error of the statement (a trigger's
// exception, a row touched twice, an internal error).
func rowCode(err error) domain.ErrorCode {
	if fault.PostgresInvalid(err) {
		return domain.ErrorCodeValidation
	}
	return domain.ErrorCodeDB
}
