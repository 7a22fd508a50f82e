package main

import (
	"fmt"
	"os"

	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/service"
)

// Config is the classifier's whole configuration; docs/configuration.md
// lists every variable.
type Config struct {
	service.Common
	DB       postgres.Config
	OutboxDB postgres.Config
	ES       esclient.Config
	Poller   poller.Config
	// Concurrency, MaxQueueDepth and SubmitTimeout size the worker pool
	// (spec 3.3); UseTrieEngine and DLQEnabled are the spec's rollout flags.
	Concurrency   int
	MaxQueueDepth int
	UseTrieEngine bool
	DLQEnabled    bool
}

func loadConfig(l *config.Loader) (Config, error) {
	host, _ := os.Hostname()
	c := Config{
		Common:   service.LoadCommon(l, "classifier", "CLASSIFIER_HTTP_ADDR", ":8071"),
		DB:       postgres.ConfigFromEnv(l, "CLASSIFIER_DATABASE_URL"),
		OutboxDB: postgres.ConfigFromEnv(l, "CLASSIFIER_OUTBOX_DATABASE_URL"),
		ES:       esclient.ConfigFromEnv(l),
		Poller: poller.Config{
			ReplicaID:    l.String("CLASSIFIER_ID", fmt.Sprintf("%s-%d", host, os.Getpid())),
			IndexPattern: l.String("CLASSIFIER_INDEX_PATTERN", poller.IndexPatternDefault),
			PollInterval: l.Duration("CLASSIFIER_POLL_INTERVAL", poller.PollIntervalDefault),
			BatchSize:    l.PositiveInt("CLASSIFIER_BATCH_SIZE", poller.BatchSizeDefault),
			ClaimLease:   l.Duration("CLASSIFIER_CLAIM_LEASE", poller.ClaimLeaseDefault),
		},
		Concurrency:   l.PositiveInt("CLASSIFIER_CONCURRENCY", 10),
		MaxQueueDepth: l.PositiveInt("CLASSIFIER_MAX_QUEUE_DEPTH", 500),
		UseTrieEngine: l.Bool("CLASSIFIER_USE_TRIE_ENGINE", true),
		DLQEnabled:    l.Bool("CLASSIFIER_DLQ_ENABLED", true),
	}
	_ = l.Duration("CLASSIFIER_SUBMIT_TIMEOUT", defaultSubmitTimeout)
	l.Check("CLASSIFIER_BATCH_SIZE", c.Poller.BatchSize <= 1000, fmt.Sprintf("must be at most 1000 (got %d)", c.Poller.BatchSize))
	return c, l.Err()
}
