// Package deadletter is the classifier's dead-letter queue, the whole
// feature in one place:
//
//   - domain.DeadLetterEntry (classifier/internal/domain/dead_letter.go),
//     what the queue holds and what is enqueued, with its retry helpers;
//   - the retry schedule of each error code (Policies);
//   - Repository, the dead_letter_queue table: recording failures with
//     backoff, claiming due entries with a lease, resolving the entries of
//     documents since classified, and the operator's list, stats, requeue
//     and delete;
//   - RetryWorker, which claims due entries, re-reads their documents from
//     Elasticsearch and submits them to the normal worker pool and commit
//     path (the committer resolves an entry on success and records the
//     next failure otherwise);
//   - RegisterRoutes, the operator's HTTP routes under /api/v1/dlq, mounted
//     by package opsapi (whose tests serve them as main does and check every
//     answer against the OpenAPI document).
//
// The committer (package processor) writes failures with
// Repository.EnqueueBatch and removes the entries of documents since
// classified with Repository.Remove.
package deadletter
