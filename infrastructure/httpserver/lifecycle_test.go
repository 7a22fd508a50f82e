package httpserver_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
)

// The server keeps the start/stop contract when started and stopped from
// many goroutines at once (run with -race).
func TestServerStartStopStress(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		s, err := httpserver.New(httpserver.Config{Addr: "127.0.0.1:0", ServiceName: "svc"}, logger, http.NotFoundHandler())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Every Stop waits for the same drain: a second Stop called while the first
// waits for an in-flight request returns only once that request is done.
func TestConcurrentStopsWaitForTheDrain(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	var finished sync.WaitGroup
	finished.Add(1)
	var requestDone bool
	var mu sync.Mutex
	s, err := httpserver.New(httpserver.Config{Addr: "127.0.0.1:0", ServiceName: "svc"}, slog.New(slog.DiscardHandler), http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	s.Router().GET("/slow", func(c *gin.Context) {
		close(entered)
		<-release
		mu.Lock()
		requestDone = true
		mu.Unlock()
		c.Status(http.StatusNoContent)
	})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer finished.Done()
		res, err := http.Get("http://" + s.Addr() + "/slow")
		if err != nil {
			t.Errorf("slow request: %v", err)
			return
		}
		res.Body.Close()
	}()
	<-entered
	stops := make(chan error, 2)
	for range 2 {
		go func() { stops <- s.Stop(context.Background()) }()
	}
	// Once the listener is closed the drain has begun: let the request
	// finish.
	for {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			break
		}
		c.Close()
		runtime.Gosched()
	}
	close(release)
	for range 2 {
		if err := <-stops; err != nil {
			t.Errorf("Stop: %v", err)
		}
		mu.Lock()
		done := requestDone
		mu.Unlock()
		if !done {
			t.Error("a Stop returned before the in-flight request finished")
		}
	}
	finished.Wait()
}
