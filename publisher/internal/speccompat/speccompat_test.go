package speccompat_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/publisher/internal/domain"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/telemetry"

	// The design's package (4.3).
	database "github.com/north-cloud/publisher/internal/outbox"
)

// The design's signatures, as it writes them. A name that changes its
// signature stops this file compiling.
var (
	// 4.2 Outbox Domain Model
	_ = domain.OutboxCreateRequest{ContentID: "", SourceName: "", IndexName: "", ContentType: "", Topics: []string(nil),
		QualityScore: 0, IsCrimeRelated: false, CrimeSubcategory: (*string)(nil), Title: "", Body: "", URL: "",
		PublishedDate: (*time.Time)(nil)}

	// 4.3 Outbox Repository
	_ func(db *sql.DB) *database.OutboxRepository                                                      = database.NewOutboxRepository
	_ func(r *database.OutboxRepository, ctx context.Context, req *domain.OutboxCreateRequest) error   = (*database.OutboxRepository).Insert
	_ func(r *database.OutboxRepository, ctx context.Context, limit int) ([]domain.OutboxEntry, error) = (*database.OutboxRepository).FetchPending
	_ func(r *database.OutboxRepository, ctx context.Context, limit int) ([]domain.OutboxEntry, error) = (*database.OutboxRepository).FetchRetryable
	_ func(r *database.OutboxRepository, ctx context.Context, id string) error                         = (*database.OutboxRepository).MarkPublished
	_ func(r *database.OutboxRepository, ctx context.Context, id string, errorMsg string) error        = (*database.OutboxRepository).MarkFailed
	_ func(r *database.OutboxRepository, ctx context.Context, olderThan time.Duration) (int64, error)  = (*database.OutboxRepository).ResetToPending
	_ func(r *database.OutboxRepository, ctx context.Context, olderThan time.Duration) (int64, error)  = (*database.OutboxRepository).CleanupPublished
	_ func(r *database.OutboxRepository, ctx context.Context) (*database.OutboxStats, error)           = (*database.OutboxRepository).GetStats
	_                                                                                                  = database.OutboxStats{Pending: 0, Publishing: 0, Published: 0, FailedRetryable: 0, FailedExhausted: 0, AvgPublishLagSeconds: 0}

	// 4.4 Outbox Worker: the telemetry it records on
	_ func(p *telemetry.Provider, ctx context.Context, insertedAt time.Time, success bool) = (*telemetry.Provider).RecordOutboxPublish
)

func request(id string, crime bool) *domain.OutboxCreateRequest {
	req := &domain.OutboxCreateRequest{
		ContentID: id, SourceName: "example_com", IndexName: "example_com_classified_content",
		ContentType: "article", Topics: []string{"news"}, QualityScore: 70, IsCrimeRelated: crime,
		Title: "Title " + id, Body: "body text", URL: "https://example.com/" + id,
	}
	if crime {
		sub := "violent_crime"
		req.CrimeSubcategory, req.Topics = &sub, []string{sub}
	}
	return req
}

func stats(t *testing.T, repo *database.OutboxRepository) database.OutboxStats {
	t.Helper()
	s, err := repo.GetStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return *s
}

// The design's repository calls, against the real Postgres: a row is
// marked only while the claim that fetched it holds it.
func TestOutboxRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := outboxtest.Database(t)
	repo := database.NewOutboxRepository(db)

	for _, req := range []*domain.OutboxCreateRequest{request("a", false), request("b", true), request("c", false), request("a", false)} {
		if err := repo.Insert(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if s := stats(t, repo); s.Pending != 3 {
		t.Fatalf("GetStats after 4 inserts, one again = %+v; want 3 pending", s)
	}

	fetched, err := repo.FetchPending(ctx, 2)
	if err != nil || len(fetched) != 2 || fetched[0].ContentID != "b" || fetched[0].RoutingKey() != "articles:crime:violent_crime" {
		t.Fatalf("FetchPending(2) = %+v, %v; want the crime row b first", fetched, err)
	}
	published, failed := fetched[0], fetched[1]
	if err := repo.MarkPublished(ctx, published.ID); err != nil {
		t.Fatal(err)
	}
	if err := repo.MarkPublished(ctx, published.ID); !errors.Is(err, database.ErrNotClaimed) {
		t.Errorf("MarkPublished twice = %v, want ErrNotClaimed", err)
	}
	if err := repo.MarkFailed(ctx, failed.ID, "redis down"); err != nil {
		t.Fatal(err)
	}
	var retries int
	var delay float64
	var msg string
	if err := db.QueryRow(`SELECT retry_count, EXTRACT(EPOCH FROM next_retry_at - updated_at), error_message
		FROM classified_outbox WHERE id = $1`, failed.ID).Scan(&retries, &delay, &msg); err != nil {
		t.Fatal(err)
	}
	if retries != 1 || delay != 60 || msg != "redis down" {
		t.Errorf("failed row: retry %d, due after %gs, %q; want 1, 60s, the error", retries, delay, msg)
	}
	if s := stats(t, repo); s.Pending != 1 || s.Published != 1 || s.FailedRetryable != 1 || s.Publishing != 0 {
		t.Errorf("GetStats = %+v; want 1 pending, 1 published, 1 failed retryable", s)
	}

	// A failed row is retryable once due, and then claimed.
	if due, err := repo.FetchRetryable(ctx, 10); err != nil || len(due) != 0 {
		t.Fatalf("FetchRetryable before the retry is due = %d rows, %v", len(due), err)
	}
	if _, err := db.Exec(`UPDATE classified_outbox SET next_retry_at = NOW() - INTERVAL '1 second' WHERE id = $1`, failed.ID); err != nil {
		t.Fatal(err)
	}
	due, err := repo.FetchRetryable(ctx, 10)
	if err != nil || len(due) != 1 || due[0].ID != failed.ID || due[0].RetryCount != 1 {
		t.Fatalf("FetchRetryable = %+v, %v; want the failed row", due, err)
	}

	// Rescued from a dead worker, the row is no longer this claim's.
	if _, err := db.Exec(`UPDATE classified_outbox SET updated_at = NOW() - INTERVAL '10 minutes' WHERE status = 'publishing'`); err != nil {
		t.Fatal(err)
	}
	if n, err := repo.ResetToPending(ctx, 5*time.Minute); err != nil || n != 1 {
		t.Fatalf("ResetToPending = %d, %v; want 1", n, err)
	}
	if err := repo.MarkFailed(ctx, failed.ID, "late"); !errors.Is(err, database.ErrNotClaimed) {
		t.Errorf("MarkFailed of a rescued row = %v, want ErrNotClaimed", err)
	}
	if err := repo.MarkPublished(ctx, "00000000-0000-0000-0000-000000000000"); !errors.Is(err, database.ErrNotClaimed) {
		t.Errorf("MarkPublished of a row never fetched = %v, want ErrNotClaimed", err)
	}

	if _, err := db.Exec(`UPDATE classified_outbox SET published_at = NOW() - INTERVAL '2 days' WHERE status = 'published'`); err != nil {
		t.Fatal(err)
	}
	if n, err := repo.CleanupPublished(ctx, 24*time.Hour); err != nil || n != 1 {
		t.Errorf("CleanupPublished = %d, %v; want 1", n, err)
	}
	if s := stats(t, repo); s.Pending != 2 || s.Published != 0 {
		t.Errorf("GetStats at the end = %+v; want 2 pending", s)
	}
}

// RecordOutboxPublish counts a publish and its lag under the design's
// names, a failure apart, and the backlog gauge is read from the table.
func TestProviderRecordOutboxPublish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := outboxtest.Database(t)
	repo := database.NewOutboxRepository(db)
	if err := repo.Insert(ctx, request("pending-1", false)); err != nil {
		t.Fatal(err)
	}
	tp, err := telemetry.NewProvider(ctx, repo.Backlog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(ctx) })
	tp.RecordOutboxPublish(ctx, time.Now().Add(-2*time.Second), true)
	tp.RecordOutboxPublish(ctx, time.Now().Add(-2*time.Second), false)
	var none *telemetry.Provider
	none.RecordOutboxPublish(ctx, time.Now(), true)

	rec := httptest.NewRecorder()
	tp.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`classifier_outbox_published_total 1`,
		`classifier_outbox_publish_lag_seconds_count 1`,
		`publisher_outbox_failed_total 1`,
		`classifier_outbox_backlog{status="pending"} 1`,
	} {
		if !strings.Contains(string(body), "\n"+s+"\n") {
			t.Errorf("/metrics lacks %q", s)
		}
	}
}
