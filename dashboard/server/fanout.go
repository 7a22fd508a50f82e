package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/north-cloud/infrastructure/httpserver"
)

// Bounds of the server's own calls to the services (the Overview summary,
// Find and the sources' priorities): each call waits at most
// fanoutCallTimeout, reads at most fanoutBodyMaxBytes, and one browser
// request makes at most fanoutParallel of them at once.
const (
	fanoutCallTimeout  = 10 * time.Second
	fanoutBodyMaxBytes = 8 << 20
	fanoutParallel     = 4
)

// part is one service's answer inside a fan-out's answer: its JSON body, or
// the HTTP status and error it gave (status 502 when it did not answer), so
// the browser says which service failed while the others' figures stay.
type part struct {
	OK     bool            `json:"ok"`
	Status int             `json:"status"`
	Data   json.RawMessage `json:"data,omitempty"`
	Error  *partError      `json:"error,omitempty"`
}

type partError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func failedPart(status int, code, message string) part {
	return part{Status: status, Error: &partError{Code: code, Message: message}}
}

// fanout calls the services' APIs on behalf of a browser request, with its
// bearer token and its client address (as the proxy sends them).
type fanout struct {
	classifier, publisher, indexManager, prometheus string
	trusted                                         []netip.Prefix
	client                                          *http.Client
}

func newFanout(cfg Config) *fanout {
	return &fanout{
		classifier:   strings.TrimRight(cfg.ClassifierURL, "/"),
		publisher:    strings.TrimRight(cfg.PublisherURL, "/"),
		indexManager: strings.TrimRight(cfg.IndexManagerURL, "/"),
		prometheus:   cfg.PrometheusURL,
		trusted:      cfg.TrustedProxies,
		client:       &http.Client{Timeout: fanoutCallTimeout},
	}
}

// get calls base+path, with in's token when withToken (not to Prometheus);
// a service that does not answer is a 502 part, one that answers an error
// its status and error.
func (f *fanout) get(ctx context.Context, in *http.Request, service, base, path string, withToken bool) part {
	ctx, cancel := context.WithTimeout(ctx, fanoutCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return failedPart(http.StatusBadGateway, "upstream_unavailable", fmt.Sprintf("fan-out get %s: %v", service, err))
	}
	req.Header.Set("Accept", "application/json")
	if a := in.Header.Get("Authorization"); a != "" && withToken {
		req.Header.Set("Authorization", a)
	}
	if ip, ok := httpserver.ClientIP(in, f.trusted); ok {
		req.Header.Set("X-Forwarded-For", ip.String())
	}
	res, err := f.client.Do(req)
	if err != nil {
		return failedPart(http.StatusBadGateway, "upstream_unavailable", fmt.Sprintf("the %s is unavailable", service))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, fanoutBodyMaxBytes+1))
	if err != nil || len(body) > fanoutBodyMaxBytes {
		return failedPart(http.StatusBadGateway, "upstream_unavailable", fmt.Sprintf("the %s's answer could not be read", service))
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error partError `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
			e.Error = partError{Code: fmt.Sprintf("http_%d", res.StatusCode), Message: fmt.Sprintf("the %s answered %d", service, res.StatusCode)}
		}
		return part{Status: res.StatusCode, Error: &e.Error}
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if !json.Valid(body) {
			return failedPart(http.StatusBadGateway, "upstream_unavailable", fmt.Sprintf("the %s's answer is not JSON", service))
		}
		return part{OK: true, Status: http.StatusOK, Data: body}
	}
	// Text (a /metrics): as a JSON string.
	raw, _ := json.Marshal(string(body))
	return part{OK: true, Status: http.StatusOK, Data: raw}
}

// pooled runs each of fns, at most fanoutParallel at a time, and waits for
// every one (each writes its own result: no shared state).
func pooled(ctx context.Context, fns []func(context.Context)) {
	sem := make(chan struct{}, fanoutParallel)
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(ctx)
		}()
	}
	wg.Wait()
}
