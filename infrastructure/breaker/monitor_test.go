package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/testenv"
)

// The monitor keeps the start/stop contract while it probes an open
// breaker (run with -race).
func TestMonitorStartStopStress(t *testing.T) {
	t.Parallel()
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		b, err := breaker.New(breaker.Config{Name: "stress", Threshold: 1, Cooldown: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		b.Failure(errors.New("down"))
		ping := func(context.Context) error { return nil }
		return breaker.NewMonitor(time.Millisecond, time.Second, testenv.Logger(t), breaker.Guarded{Breaker: b, Ping: ping})
	})
}
