// Package sink is the seam between the publisher's queue mechanics (claim
// a batch of outbox rows, record each row's outcome) and where the messages
// go. The outbox worker hands a Sink a batch of encoded messages and gets
// one Result per message back; it never talks to Redis itself.
//
// Redis publishes with PUBLISH (pub/sub); Mirror is a decorator that also
// appends every published message to a capped stream. Every Sink passes the
// one conformance test in sinktest, against a real server.
package sink

import "context"

// Message is one encoded message for one channel.
type Message struct {
	// Channel is where the message goes (the outbox row's routing key).
	Channel string
	// Body is the encoded message.
	Body []byte
}

// Result is the outcome of one message of a batch.
type Result struct {
	// Err is nil when the message was published.
	Err error
	// Unavailable marks an Err that is a failure of the sink itself (the
	// server is unreachable, timed out, refuses the credentials or the
	// command, is loading, read-only or out of memory...), which would meet
	// any message: the worker releases the row without spending a retry and
	// counts the failure against the sink's circuit breaker. An Err without
	// it concerns this message alone (such as an ACL refusing its channel)
	// and costs the row a retry.
	Unavailable bool
	// Receivers is how many subscribers received the message when it was
	// published. Zero means nobody was listening: recorded, not an error.
	Receivers int64
	// MirrorErr is a failure of a decorator's side effect after the message
	// was published (the stream mirror). The message counts as published:
	// failing the row would publish it again at every retry.
	MirrorErr error
}

// Sink publishes batches of messages.
type Sink interface {
	// Publish sends msgs and returns one Result per message, in the order
	// of msgs. It returns once every message has an outcome or ctx is done;
	// in the latter case the messages without an outcome are failed with
	// ctx's error and Unavailable (they may still go out: a duplicate
	// delivery, never a loss, since their rows are released).
	Publish(ctx context.Context, msgs []Message) []Result
	// Ping checks, bounded by ctx, that the sink could publish now; it is
	// the probe of the sink's circuit breaker.
	Ping(ctx context.Context) error
}
