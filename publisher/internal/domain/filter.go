package domain

import "time"

// OutboxFilter selects outbox entries for listing and bulk re-queueing.
// Zero fields do not filter.
type OutboxFilter struct {
	Status OutboxStatus
	Source string
	// SourceContains, when set, keeps only rows whose source name contains
	// it, ignoring case: the operator's search box.
	SourceContains string
	Channel        string
	// ContentID and Index, when set, keep only rows of that exact content
	// id and classified index: one document's row.
	ContentID string
	Index     string
	// Crime, when set, keeps only rows whose is_crime_related equals it.
	Crime *bool
	// Exhausted, when set, keeps only failed rows that have (true) or have
	// not (false) used all their retries.
	Exhausted *bool
}

// Cursor is the position after the last entry of a page: entries are listed
// newest first by (created_at, id).
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// OutboxStats summarises the outbox for operators.
type OutboxStats struct {
	Counts                  map[OutboxStatus]int64 `json:"counts"`
	FailedRetryable         int64                  `json:"failed_retryable"`
	FailedExhausted         int64                  `json:"failed_exhausted"`
	AvgPublishLagSeconds    float64                `json:"avg_publish_lag_seconds"`
	P95PublishLagSeconds    float64                `json:"p95_publish_lag_seconds"`
	OldestPendingAgeSeconds float64                `json:"oldest_pending_age_seconds"`
}

// ChannelStats is one Redis channel seen in the outbox.
type ChannelStats struct {
	Channel           string     `json:"channel"`
	PublishedLastHour int64      `json:"published_last_hour"`
	PublishedLastDay  int64      `json:"published_last_day"`
	Unpublished       int64      `json:"unpublished"`
	LastPublishedAt   *time.Time `json:"last_published_at"`
}
