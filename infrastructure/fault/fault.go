// Package fault is the one fault policy of every service: it tells, from an
// error of Postgres or Elasticsearch, whether the dependency itself is out
// or only what one statement or request carried was refused.
//
// An outage is proved, not assumed. A dependency is unavailable when it
// answers with an availability error (no connection, refused credentials,
// too many connections, shutting down, read-only) or fails a cheap probe of
// its own (Proved: a SELECT 1, a ping). Anything else one statement
// answered (a duplicate it touched twice, a value a column or a constraint
// refuses, a trigger's exception, a plan its data makes fail) is about that
// statement's data: the caller bisects the batch down to the row, sets that
// row aside with its own error and commits the rest. Only a Dependency
// fault opens a circuit breaker.
package fault

import (
	"context"
	"time"
)

// Kind is what caused a fault.
type Kind int

// Kinds of faults.
const (
	// Transient is a time-out or conflict of one statement (a
	// serialization failure, a deadlock, a statement cancelled): the same
	// work may succeed when tried again, with backoff.
	Transient Kind = iota
	// Statement is a refusal of what one statement or request carried: a
	// row's data, a constraint, a trigger's exception. Never an outage:
	// bisect to the row at fault and commit the rest.
	Statement
	// Dependency is an outage: the dependency is unreachable, refuses our
	// credentials, is overloaded, shutting down or read-only. Open its
	// breaker, pause the work that needs it, charge no retry.
	Dependency
	// Ambiguous is an error that does not tell (a deadline of our own that
	// passed, an error the driver does not explain): the dependency must be
	// probed (Proved) before it is called out.
	Ambiguous
)

func (k Kind) String() string {
	switch k {
	case Statement:
		return "statement"
	case Dependency:
		return "dependency"
	case Ambiguous:
		return "ambiguous"
	default:
		return "transient"
	}
}

// Probe is a cheap check of a dependency itself (a SELECT 1, a cluster
// ping): nil when it answers.
type Probe func(ctx context.Context) error

// ProbeTimeout bounds a probe: a dependency that cannot answer a SELECT 1
// in this time is taken for out.
const ProbeTimeout = 2 * time.Second

// Proved settles an Ambiguous kind with probe: a dependency that fails its
// probe (within ProbeTimeout) is out (Dependency); one that answers was
// not, and the statement's error is its own (Statement). Any other kind is
// returned as it is. Without a probe nothing can be proved and the error is
// taken for an outage, the cautious answer that pauses work instead of
// failing documents.
func Proved(ctx context.Context, kind Kind, probe Probe) Kind {
	if kind != Ambiguous {
		return kind
	}
	if probe == nil {
		return Dependency
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ProbeTimeout)
	defer cancel()
	if probe(ctx) != nil {
		return Dependency
	}
	return Statement
}
