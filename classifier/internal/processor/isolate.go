package processor

import (
	"context"
	"log/slog"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/fault"
)

// database is a Postgres database the committer writes to: the breaker
// that guards it and the probe that proves its outage when an error does
// not tell.
type database struct {
	breaker *breaker.Breaker
	probe   fault.Probe
}

// statement is one Postgres write of a batch's results, made by the
// committer under one policy (isolate).
type statement struct {
	// name says what is written, for logs.
	name string
	// db is the database written to.
	db database
	// run writes the results in one statement (or one round of them).
	run func(ctx context.Context, rs []Result) error
	// fail is what becomes of a result that run refuses alone with err.
	// Defaults to the result failing with err and rowCode(err).
	fail func(r Result, err error) Result
}

// rowsOf adapts a write of documents to a write of results.
func rowsOf(write func(context.Context, []*domain.ClassifiedContent) error) func(context.Context, []Result) error {
	return func(ctx context.Context, rs []Result) error { return write(ctx, docsOf(rs)) }
}

func docsOf(rs []Result) []*domain.ClassifiedContent {
	docs := make([]*domain.ClassifiedContent, len(rs))
	for i, r := range rs {
		docs[i] = r.Doc
	}
	return docs
}

// isolate writes rs with st, and tells st's breaker how the database
// answered. A statement error is an outage only when the database says so
// (an availability error) or, when the error does not tell, fails its probe
// (fault.PostgresProved): then held is true, the breaker counts a failure
// and the caller holds the batch, charging no retry. Any other error is the
// statement's, whatever its class (a row touched twice, invalid data, a
// constraint, a trigger's exception, a deadlock): the batch is split in
// halves and each half written again, down to the row at fault, which
// alone fails with its own error (st.fail); the other rows are written.
func isolate(ctx context.Context, logger *slog.Logger, rs []Result, st statement) (ok, failed []Result, held bool) {
	if len(rs) == 0 {
		return nil, nil, false
	}
	ok, failed, err := bisect(ctx, rs, st)
	if err != nil {
		st.db.breaker.Failure(err)
		return nil, nil, true
	}
	st.db.breaker.Success()
	if len(failed) > 0 {
		logger.WarnContext(ctx, "rows refused by their statement are set aside; the rest of the batch is written",
			"write", st.name, "refused", len(failed), "written", len(ok))
	}
	return ok, failed, false
}

// bisect is isolate's split; err is the outage that stops it.
func bisect(ctx context.Context, rs []Result, st statement) (ok, failed []Result, err error) {
	werr := st.run(ctx, rs)
	if werr == nil {
		return rs, nil, nil
	}
	if fault.PostgresProved(ctx, werr, st.db.probe) == fault.Dependency {
		return nil, nil, werr
	}
	if len(rs) == 1 {
		if st.fail != nil {
			return nil, []Result{st.fail(rs[0], werr)}, nil
		}
		return nil, withError(rs, rowCode(werr), werr), nil
	}
	half := len(rs) / 2
	okA, failedA, err := bisect(ctx, rs[:half], st)
	if err != nil {
		return nil, nil, err
	}
	okB, failedB, err := bisect(ctx, rs[half:], st)
	if err != nil {
		return nil, nil, err
	}
	return append(okA, okB...), append(failedA, failedB...), nil
}

// withError returns rs failed with code and err, their documents dropped.
func withError(rs []Result, code domain.ErrorCode, err error) []Result {
	out := make([]Result, len(rs))
	for i, r := range rs {
		out[i] = Result{Raw: r.Raw, Err: err, Code: code}
	}
	return out
}
