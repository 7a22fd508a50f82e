package config_test

import (
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/config"
)

func TestPositiveOr(t *testing.T) {
	t.Parallel()
	if got := config.PositiveOr(3, 5); got != 3 {
		t.Errorf("PositiveOr(3, 5) = %d", got)
	}
	for _, v := range []int{0, -1} {
		if got := config.PositiveOr(v, 5); got != 5 {
			t.Errorf("PositiveOr(%d, 5) = %d, want the default", v, got)
		}
	}
	if got := config.PositiveOr(-time.Second, time.Minute); got != time.Minute {
		t.Errorf("PositiveOr(-1s, 1m) = %s", got)
	}
	if got := config.PositiveOr(0.5, 2); got != 0.5 {
		t.Errorf("PositiveOr(0.5, 2) = %g", got)
	}
}
