package storage_test

import (
	"context"
	"database/sql"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/telemetry"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/infrastructure/testenv/spantest"
)

// newOutboxWriter returns a writer over a scratch database holding the
// outbox table (outbox.TestSchema), and that database.
func newOutboxWriter(t *testing.T) (*storage.OutboxWriter, *sql.DB) {
	t.Helper()
	db, _ := scratchOutbox(t)
	return storage.NewOutboxWriter(db, testenv.Logger(t)), db
}

// scratchOutbox returns a scratch database holding the outbox table
// (outbox.TestSchema), and its URL.
func scratchOutbox(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn := testenv.Postgres(t)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := outbox.ApplyTestSchema(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db, dsn
}

// The insert is a span under the one the writer was called in (the
// committer's), and each row carries that span's traceparent, so the
// publisher continues the document's trace; a write outside any span leaves
// the column NULL.
func TestOutboxWriterCarriesTraceparent(t *testing.T) {
	t.Parallel()
	w, db := newOutboxWriter(t)
	ctx := context.Background()
	tp, spans := spantest.New(t)
	doc := func(id string) *domain.ClassifiedContent {
		return &domain.ClassifiedContent{ID: id, SourceName: "s", Index: "s_raw_content", ContentType: "article", Title: "t", URL: "u"}
	}

	spanCtx, span := tp.Tracer("test").Start(ctx, "classifier.commit")
	if err := w.WriteBatch(spanCtx, []*domain.ClassifiedContent{doc("traced")}); err != nil {
		t.Fatal(err)
	}
	span.End()
	if err := w.WriteBatch(ctx, []*domain.ClassifiedContent{doc("untraced")}); err != nil {
		t.Fatal(err)
	}

	got := map[string]sql.NullString{}
	rows, err := db.Query(`SELECT content_id, traceparent FROM ` + outbox.Table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var tpv sql.NullString
		if err := rows.Scan(&id, &tpv); err != nil {
			t.Fatal(err)
		}
		got[id] = tpv
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var write *tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == "classifier.outbox.write" {
			write = &s
		}
	}
	if write == nil || write.Parent.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("no classifier.outbox.write span under the commit span (%v)", write)
	}
	writeCtx := trace.ContextWithSpanContext(ctx, write.SpanContext)
	if want := telemetry.Traceparent(writeCtx); got["traced"].String != want {
		t.Errorf("traced row's traceparent = %q, want the write span's %q", got["traced"].String, want)
	}
	if got["untraced"].Valid {
		t.Errorf("untraced row's traceparent = %q, want NULL", got["untraced"].String)
	}
}
