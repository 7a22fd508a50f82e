// Package backoff computes exponential retry delays with jitter and retries an
// operation until it succeeds, the context ends or a time budget runs out.
//
// Every retry in the project (connecting to a dependency at start-up, the
// dead-letter queue, outbox publishing) goes through one Policy so that delays
// are bounded and spread out: jitter keeps many replicas that failed together
// from retrying together.
package backoff

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/north-cloud/infrastructure/config"
)

const (
	// InitialDefault is the first delay when Policy.Initial is zero.
	InitialDefault = 200 * time.Millisecond
	// MaxDefault caps the delay when Policy.Max is zero.
	MaxDefault = 5 * time.Second
	// MultiplierDefault is the growth factor when Policy.Multiplier is zero.
	MultiplierDefault = 2.0
)

// Policy describes an exponential backoff: Initial * Multiplier^attempt,
// capped at Max, with up to Jitter (a fraction, 0..1) of the delay taken off
// at random.
type Policy struct {
	// Initial is the delay before the second attempt. Defaults to InitialDefault.
	Initial time.Duration
	// Max caps every delay. Defaults to MaxDefault.
	Max time.Duration
	// Multiplier is the growth per attempt. Defaults to MultiplierDefault.
	Multiplier float64
	// Jitter is the largest fraction of a delay removed at random, in [0, 1].
	// Zero means no jitter.
	Jitter float64
}

func (p Policy) withDefaults() Policy {
	p.Initial = config.PositiveOr(p.Initial, InitialDefault)
	p.Max = config.PositiveOr(p.Max, MaxDefault)
	if p.Multiplier < 1 {
		p.Multiplier = MultiplierDefault
	}
	p.Jitter = math.Min(math.Max(p.Jitter, 0), 1)
	return p
}

// Delay returns the wait after the given number of failed attempts (0 for the
// first failure). It never exceeds Max and never goes below
// (1-Jitter) times the un-jittered delay.
func (p Policy) Delay(attempt int) time.Duration {
	p = p.withDefaults()
	if attempt < 0 {
		attempt = 0
	}
	d := float64(p.Initial) * math.Pow(p.Multiplier, float64(attempt))
	if d > float64(p.Max) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(p.Max)
	}
	return Jitter(time.Duration(d), p.Jitter)
}

// Jitter returns d less a random part of up to fraction (clamped to [0, 1])
// of it: the one jitter of the project, so that replicas that started or
// failed together drift apart instead of acting in step.
func Jitter(d time.Duration, fraction float64) time.Duration {
	fraction = math.Min(math.Max(fraction, 0), 1)
	if fraction == 0 || d <= 0 {
		return d
	}
	return d - time.Duration(float64(d)*fraction*rand.Float64())
}

// Retry calls op until it returns nil, returns a Permanent error, ctx ends or
// budget has passed since the first call (budget <= 0 means no budget). notify,
// when not nil, is told of each failure and the wait before the next attempt,
// so callers can log progress. The returned error wraps the last failure.
func Retry(ctx context.Context, p Policy, budget time.Duration, op func(ctx context.Context) error, notify func(attempt int, err error, wait time.Duration)) error {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return perm.err
		}
		wait := p.Delay(attempt)
		if budget > 0 && time.Since(start)+wait > budget {
			return fmt.Errorf("gave up after %d attempts in %s: %w", attempt+1, time.Since(start).Round(time.Millisecond), err)
		}
		if notify != nil {
			notify(attempt+1, err, wait)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-timer.C:
		}
	}
}

// Permanent marks an error that Retry must not retry.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }
