package testenv_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/testenv"
)

// Writers on other goroutines and the test's reads share a SyncBuffer
// (run with -race); Tail quotes the last lines, fewer when there are fewer.
func TestSyncBufferTail(t *testing.T) {
	t.Parallel()
	var b testenv.SyncBuffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { fmt.Fprintf(&b, "line %d\n", i) })
	}
	testenv.WaitFor(t, 10*time.Second, time.Millisecond, "four lines", func() bool { return len(b.String()) == 4*len("line 0\n") })
	wg.Wait()
	var c testenv.SyncBuffer
	fmt.Fprint(&c, "a\nb\nc\n")
	if got := c.Tail(2); got != "b\nc" {
		t.Errorf("Tail(2) = %q, want %q", got, "b\nc")
	}
	if got := c.Tail(10); got != "a\nb\nc" {
		t.Errorf("Tail(10) = %q, want %q", got, "a\nb\nc")
	}
}
