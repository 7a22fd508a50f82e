package api

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Defaults of the document reads' bounds (Config.Reads).
const (
	// ReadsPerCallerDefault is how many reads of documents (a list, one
	// document, a query with size > 0) one caller runs at once: the
	// dashboard's Find asks for up to 4 documents at once.
	ReadsPerCallerDefault = 4
	// ReadsTotalDefault is how many run at once over every caller.
	ReadsTotalDefault = 8
	// MaxResultBytesDefault bounds the answer of one read taken from
	// Elasticsearch: a page of 100 documents of 40 KB, or of 50 raw
	// documents with 80 KB pages.
	MaxResultBytesDefault = 4 << 20
	// readsRetryAfterSeconds is the Retry-After of a read refused for the
	// caller's or the service's slots, or for Elasticsearch's load.
	readsRetryAfterSeconds = 2
)

// ReadLimits bound what reads of documents may hold: each read takes up to
// MaxResultBytes from Elasticsearch, at most PerCaller of one caller and
// Total of all callers at once, so they hold at most Total x MaxResultBytes
// of answers (three copies of each at most: read, decoded, encoded: about
// 96 MiB at the defaults) whatever the callers do. A read past a limit is
// refused at once with 429 and Retry-After, never queued. Counts (a query
// of size 0, /content/_count) return no documents and take no slot; their
// answers are bounded by MaxResultBytes too.
type ReadLimits struct {
	PerCaller      int
	Total          int
	MaxResultBytes int64
}

func (l *ReadLimits) setDefaults() {
	if l.PerCaller == 0 {
		l.PerCaller = ReadsPerCallerDefault
	}
	if l.Total == 0 {
		l.Total = ReadsTotalDefault
	}
	if l.MaxResultBytes == 0 {
		l.MaxResultBytes = MaxResultBytesDefault
	}
}

// Validate reports limits that would refuse every read.
func (l ReadLimits) Validate() error {
	if l.PerCaller < 1 || l.Total < 1 || l.MaxResultBytes < 1<<10 {
		return fmt.Errorf("per caller and total must be at least 1 and the result bytes at least 1024 (got %d, %d, %d)", l.PerCaller, l.Total, l.MaxResultBytes)
	}
	if l.PerCaller > l.Total {
		return fmt.Errorf("per caller (%d) must not exceed the total (%d)", l.PerCaller, l.Total)
	}
	return nil
}

// readSlots counts the reads in flight per caller and in all. Its map holds
// only callers with a read in flight, so it is bounded by Total.
type readSlots struct {
	perCaller, total int
	mu               sync.Mutex
	inFlight         int
	byCaller         map[string]int
}

func newReadSlots(l ReadLimits) *readSlots {
	return &readSlots{perCaller: l.PerCaller, total: l.Total, byCaller: map[string]int{}}
}

// acquire takes a slot for caller; "" with ok, or the limit that refused.
func (s *readSlots) acquire(caller string) (refusal string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byCaller[caller] >= s.perCaller:
		return fmt.Sprintf("at most %d document reads per caller at once; retry when one has finished", s.perCaller), false
	case s.inFlight >= s.total:
		return fmt.Sprintf("the service runs at most %d document reads at once; retry shortly", s.total), false
	}
	s.byCaller[caller]++
	s.inFlight++
	return "", true
}

func (s *readSlots) release(caller string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if s.byCaller[caller]--; s.byCaller[caller] <= 0 {
		delete(s.byCaller, caller)
	}
}

// take takes a read slot for the request's caller (the token's subject:
// the routes sit behind the bearer token middleware). When none is free it
// answers 429 with Retry-After and returns false; else the caller runs the
// read and then calls the returned release.
func (s *readSlots) take(c *gin.Context) (release func(), ok bool) {
	caller := auth.Subject(c)
	refusal, ok := s.acquire(caller)
	if !ok {
		c.Header("Retry-After", strconv.Itoa(readsRetryAfterSeconds))
		httpserver.WriteError(c, http.StatusTooManyRequests, httpserver.CodeTooManyRequests, refusal)
		return nil, false
	}
	return func() { s.release(caller) }, true
}
