package indices

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/north-cloud/infrastructure/esclient"
)

// Sentinel errors for the outcomes callers must tell apart; the API maps
// each to one HTTP status in one place.
var (
	// ErrNotFound: the index or document does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: the index already exists.
	ErrExists = errors.New("already exists")
	// ErrBadRequest: Elasticsearch refused the request as invalid (a bad
	// query, an unknown sort field, invalid settings); the message carries
	// Elasticsearch's reason.
	ErrBadRequest = errors.New("rejected by elasticsearch")
	// ErrConflict: a version conflict or an index in the wrong state.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: Elasticsearch could not be reached or timed out;
	// retrying later may help.
	ErrUnavailable = errors.New("elasticsearch unavailable")
	// ErrBusy: Elasticsearch refused the request for its load (429: a full
	// search queue, a tripped circuit breaker). It is back-pressure, not an
	// outage: the same request shortly after may pass.
	ErrBusy = errors.New("elasticsearch busy")
	// ErrTooLarge: the answer is larger than the caller's budget
	// (Search.MaxBytes); nothing of it is returned.
	ErrTooLarge = errors.New("result too large")
	// ErrUpstream: Elasticsearch answered with a server error.
	ErrUpstream = errors.New("elasticsearch error")
)

// Error is an Elasticsearch failure classified by Kind (one of the sentinel
// errors above), with Elasticsearch's own reason when it gave one.
type Error struct {
	Op     string
	Kind   error
	Status int
	Type   string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	msg := e.Op + ": " + e.Kind.Error()
	if e.Status != 0 {
		msg += fmt.Sprintf(" (%d)", e.Status)
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrNotFound) and friends work.
func (e *Error) Is(target error) bool { return e.Kind == target }

func (e *Error) Unwrap() error { return e.Err }

// esErrorBody is the JSON error shape Elasticsearch answers with.
type esErrorBody struct {
	Error json.RawMessage `json:"error"`
	Found *bool           `json:"found"`
}

// esErrorDetail is Elasticsearch's error object with its caused_by, which
// the index-manager appends to the reason it answers with.
type esErrorDetail struct {
	esclient.ErrorObject
	CausedBy *struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"caused_by"`
}

// maxReasonLen keeps Elasticsearch's reasons (which can quote a whole query)
// short enough for an API error message.
const maxReasonLen = 500

// do sends req and classifies a transport failure or non-2xx answer.
// On success the caller reads and closes res.Body.
//
// Each call is a span named "elasticsearch <op>" when the client was built
// with a tracer provider (esclient.Config.TracerProvider), a child of the
// span in ctx (the HTTP request's): the request structs the store builds
// carry no instrumentation of their own, so the store starts it here.
func (s *Store) do(ctx context.Context, op string, req esapi.Request) (*esapi.Response, error) {
	inst := s.es.InstrumentationEnabled()
	if inst == nil {
		return s.send(ctx, op, req)
	}
	ctx = inst.Start(ctx, "elasticsearch "+op)
	defer inst.Close(ctx)
	res, err := s.send(ctx, op, req)
	if err != nil {
		inst.RecordError(ctx, err)
	}
	return res, err
}

// send is do without its span.
func (s *Store) send(ctx context.Context, op string, req esapi.Request) (*esapi.Response, error) {
	res, err := req.Do(ctx, s.es)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) && errors.Is(ctx.Err(), context.Canceled) {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		return nil, &Error{Op: op, Kind: ErrUnavailable, Err: err}
	}
	if !res.IsError() {
		return res, nil
	}
	return nil, responseError(op, res)
}

// responseError classifies a non-2xx answer and closes its body.
func responseError(op string, res *esapi.Response) *Error {
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	e := &Error{Op: op, Status: res.StatusCode}
	var body esErrorBody
	_ = json.Unmarshal(raw, &body)
	var detail esErrorDetail
	if len(body.Error) > 0 {
		if err := json.Unmarshal(body.Error, &detail); err != nil {
			// Some APIs answer {"error":"text"}.
			var text string
			_ = json.Unmarshal(body.Error, &text)
			detail.Reason = text
		}
	}
	e.Type, e.Reason = detail.Type, detail.Reason
	if detail.CausedBy != nil && detail.CausedBy.Reason != "" {
		e.Reason += ": " + detail.CausedBy.Reason
	} else if len(detail.RootCause) > 0 && detail.RootCause[0].Reason != "" && detail.RootCause[0].Reason != detail.Reason {
		e.Reason += ": " + detail.RootCause[0].Reason
	}
	if len(e.Reason) > maxReasonLen {
		e.Reason = e.Reason[:maxReasonLen] + "..."
	}
	switch st := res.StatusCode; {
	case st == http.StatusNotFound:
		e.Kind = ErrNotFound
	case e.Type == "resource_already_exists_exception":
		e.Kind = ErrExists
	case st == http.StatusConflict:
		e.Kind = ErrConflict
	case st == http.StatusTooManyRequests:
		e.Kind = ErrBusy
	case st == http.StatusRequestTimeout || st == http.StatusGatewayTimeout:
		e.Kind = ErrUnavailable
	case st >= 500:
		e.Kind = ErrUpstream
	case st >= 400:
		e.Kind = ErrBadRequest
	default:
		e.Kind = ErrUpstream
	}
	return e
}

// decode reads a successful response body into v and closes it.
func decode(op string, res *esapi.Response, v any) error {
	return decodeBounded(op, res, v, 0, false)
}

// decodeNumbers is decode with numbers kept as json.Number, of an answer
// of at most maxBytes (none when 0).
func decodeNumbers(op string, res *esapi.Response, v any, maxBytes int64) error {
	return decodeBounded(op, res, v, maxBytes, true)
}

// decodeBounded is decode of an answer of at most maxBytes (none when 0):
// a larger one is ErrTooLarge, refused from its Content-Length before a
// byte is read, or once the decoder has read maxBytes, so no more than
// that is ever held.
func decodeBounded(op string, res *esapi.Response, v any, maxBytes int64, numbers bool) error {
	defer res.Body.Close()
	tooLarge := func() error {
		return &Error{Op: op, Kind: ErrTooLarge, Reason: fmt.Sprintf("the answer is larger than %d bytes", maxBytes)}
	}
	var body io.Reader = res.Body
	if maxBytes > 0 {
		if n, err := strconv.ParseInt(res.Header.Get("Content-Length"), 10, 64); err == nil && n > maxBytes {
			return tooLarge()
		}
		body = &budgetReader{r: res.Body, left: maxBytes}
	}
	dec := json.NewDecoder(body)
	if numbers {
		dec.UseNumber()
	}
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, errOverBudget) {
			return tooLarge()
		}
		return &Error{Op: op, Kind: ErrUpstream, Err: fmt.Errorf("decode response: %w", err)}
	}
	return nil
}

var errOverBudget = errors.New("over budget")

// budgetReader reads at most left bytes of r, then fails with errOverBudget
// (io.LimitReader would end quietly, and a truncated answer could decode).
type budgetReader struct {
	r    io.Reader
	left int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Spent: fine if the answer ends here, not if it goes on.
		var one [1]byte
		if n, err := b.r.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, errOverBudget
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// exec is do for a request whose answer says nothing beyond success: the
// body is drained and closed.
func (s *Store) exec(ctx context.Context, op string, req esapi.Request) error {
	res, err := s.do(ctx, op, req)
	if err != nil {
		return err
	}
	discard(res)
	return nil
}

// discard drains and closes a successful response body.
func discard(res *esapi.Response) {
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
}
