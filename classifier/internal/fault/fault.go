// Package fault classifies every error the classifier meets, once and in one
// place, by what caused it, so that a fault stays with its cause:
//
//   - Document: this document can never succeed as it is (validation, size,
//     encoding, a mapping that refuses its value). It goes to the
//     dead-letter queue as VALIDATION_ERROR with no retries.
//   - Dependency: Elasticsearch or a Postgres database is unavailable,
//     refuses our credentials, or is overloaded. The dependency's circuit
//     breaker opens and the work that needs it pauses; no document is
//     charged a retry.
//   - Transient: a time-out or conflict on one item. That item is retried
//     with backoff through the dead-letter queue.
package fault

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/esclient"
)

// Kind is what caused a fault.
type Kind int

// Kinds of faults.
const (
	Transient Kind = iota
	Document
	Dependency
)

func (k Kind) String() string {
	switch k {
	case Document:
		return "document"
	case Dependency:
		return "dependency"
	default:
		return "transient"
	}
}

// Code is the dead-letter error code for a fault of kind k met while using
// the named store ("elasticsearch" or a Postgres database).
func Code(k Kind, elastic bool, err error) domain.ErrorCode {
	switch {
	case k == Document:
		return domain.ErrorCodeValidation
	case elastic && isTimeout(err):
		return domain.ErrorCodeESTimeout
	case elastic:
		return domain.ErrorCodeESUnavailable
	default:
		return domain.ErrorCodeDB
	}
}

// Elasticsearch classifies an error of a whole Elasticsearch request (a
// bulk, a search). A request that reached Elasticsearch and was refused as
// a whole for what it carried (400, 404 of an index, 413 that a split could
// not cure) is the document's; unavailable, overloaded (429, 5xx),
// unauthorized (401, 403) and unreachable are the dependency's.
func Elasticsearch(err error) Kind {
	if err == nil {
		return Transient
	}
	var re *esclient.ResponseError
	if errors.As(err, &re) {
		switch {
		case re.Status == http.StatusUnauthorized, re.Status == http.StatusForbidden && !isBlock(re.Body):
			return Dependency
		case re.Status == http.StatusTooManyRequests, re.Status >= 500:
			return Dependency
		case re.Status == http.StatusRequestTimeout:
			return Transient
		case re.Status >= 400:
			return Document
		}
	}
	if errors.Is(err, context.Canceled) {
		return Transient
	}
	return Dependency // connection refused, reset, DNS, a whole request timing out
}

// ElasticsearchItem classifies the error of one item of a bulk request.
// Per item, a 4xx other than 408/409/429 is the document's (a mapping that
// refuses its value, a document too large); 429 and 5xx mean the cluster is
// overloaded or a shard is unavailable; 408 and 409 are transient.
func ElasticsearchItem(status int, body string) Kind {
	switch {
	case status == http.StatusTooManyRequests || status >= 500:
		return Dependency
	case status == http.StatusForbidden && isBlock(body):
		// A block on the index (read-only, disk flood stage) lifts in time:
		// retry with backoff rather than fail the document for good.
		return Transient
	case status == http.StatusRequestTimeout || status == http.StatusConflict:
		return Transient
	case status >= 400:
		return Document
	default:
		return Transient
	}
}

// isBlock reports a cluster or index block (read-only index, disk flood
// stage): Elasticsearch answers 403 for those too, but they are about one
// index, not our credentials.
func isBlock(body string) bool {
	return strings.Contains(body, "cluster_block_exception")
}

// Postgres classifies an error of a Postgres statement. Data exceptions and
// integrity violations (class 22 and 23: an invalid byte sequence, a value
// too long, a NOT NULL or CHECK violation) are a row's; connection failures,
// an unavailable server, refused credentials or privileges, and too many
// connections are the database's; serialization failures, deadlocks and
// statement time-outs are transient.
func Postgres(err error) Kind {
	if err == nil {
		return Transient
	}
	var pe *pq.Error
	if errors.As(err, &pe) {
		class := string(pe.Code.Class())
		switch {
		case class == "22" || class == "23":
			return Document
		case class == "40" || pe.Code == "57014": // serialization, deadlock; statement timeout
			return Transient
		default:
			// 08 connection, 28 authorization, 3D unknown database, 42501
			// insufficient privilege, 53 resources, 57P admin shutdown and
			// cannot connect now, XX internal: nothing one row can fix.
			return Dependency
		}
	}
	if errors.Is(err, context.Canceled) {
		return Transient
	}
	if strings.Contains(err.Error(), "converting argument") {
		return Document // database/sql could not encode one row's value
	}
	// Connection refused or reset, a bad connection, a time-out of the whole
	// statement, a closed pool: the database's.
	return Dependency
}

func isTimeout(err error) bool {
	var re *esclient.ResponseError
	if errors.As(err, &re) {
		return re.Status == http.StatusRequestTimeout || re.Status == http.StatusGatewayTimeout
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
