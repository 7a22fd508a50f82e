package esclient_test

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/infrastructure/testenv/spantest"
)

func TestNewConnectsToRealCluster(t *testing.T) {
	t.Parallel()
	url := testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch")
	client, err := esclient.New(context.Background(), esclient.Config{URL: url, ConnectTimeout: 10 * time.Second}, testenv.Logger(t))
	if err != nil {
		testenv.Unavailable(t, "elasticsearch", err)
	}
	res, err := client.Indices.Get([]string{"missing-index-" + testenv.UniqueName("")}, client.Indices.Get.WithContext(context.Background()))
	err = esclient.CheckResponse("get missing index", res, err)
	if !esclient.IsNotFound(err) {
		t.Fatalf("get missing index: err = %v, want a 404 ResponseError", err)
	}
	if !strings.Contains(err.Error(), "get missing index") {
		t.Errorf("error %q does not name the operation", err)
	}
}

func TestNewGivesUpNamingTheURL(t *testing.T) {
	t.Parallel()
	_, err := esclient.New(context.Background(), esclient.Config{URL: "http://127.0.0.1:1", ConnectTimeout: 500 * time.Millisecond}, testenv.Logger(t))
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("err = %v, want a connect error naming the URL", err)
	}
}

// The password of an Elasticsearch URL never reaches a log line or an
// error: start-up retries log the URL redacted.
func TestCredentialsRedactedInLogsAndErrors(t *testing.T) {
	t.Parallel()
	var logs testenv.SyncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	_, err := esclient.New(context.Background(), esclient.Config{URL: "http://elastic:s3cr3t-pw@127.0.0.1:1", ConnectTimeout: 600 * time.Millisecond}, log)
	if err == nil || strings.Contains(err.Error(), "s3cr3t-pw") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("err = %v, want a connect error naming the host without the password", err)
	}
	if strings.Contains(logs.String(), "s3cr3t-pw") || !strings.Contains(logs.String(), "not reachable yet") {
		t.Fatalf("logs leak the password or lack the retry line: %s", logs.String())
	}
	for raw, want := range map[string]string{
		"https://elastic:pw@es:9200":                  "https://elastic:xxxxx@es:9200",
		"http://127.0.0.1:9200":                       "http://127.0.0.1:9200",
		"https://es:9200/?api_key=topsecret":          "https://es:9200/?api_key=xxxxx",
		"https://e:pw@es1:9200,https://e:pw@es2:9200": "https://e:xxxxx@es1:9200,https://e:xxxxx@es2:9200",
	} {
		if got := esclient.Redact(raw); got != want {
			t.Errorf("Redact(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A cluster is named by several node URLs; each must be a URL, and the
// client keeps answering when the first node it was given is gone.
func TestSeveralNodeURLs(t *testing.T) {
	t.Parallel()
	for raw, wantErr := range map[string]bool{
		"http://a:9200, http://b:9200": false,
		"http://a:9200,ftp://b:9200":   true,
		"http://a:9200,,":              false,
		"http://a:9200,b":              true,
	} {
		l := config.NewFromMap(map[string]string{"ELASTICSEARCH_URL": raw})
		cfg := esclient.ConfigFromEnv(l)
		if gotErr := l.Err() != nil; gotErr != wantErr {
			t.Errorf("ELASTICSEARCH_URL=%q: error %v, want error %t", raw, l.Err(), wantErr)
		}
		if !wantErr && cfg.URL != raw {
			t.Errorf("ELASTICSEARCH_URL=%q: URL %q, want it kept", raw, cfg.URL)
		}
	}
	url := testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch")
	// The first address refuses connections: the request goes to the next.
	client, err := esclient.NewLazy(esclient.Config{URL: "http://127.0.0.1:1," + url})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := esclient.Ping(client)(context.Background()); err != nil {
			t.Fatalf("ping %d with a dead first node: %v", i, err)
		}
	}
}

// With a tracer provider, each request is a span named after its endpoint,
// a child of the span in its context: the index-manager's Elasticsearch
// calls show inside its request spans.
func TestRequestSpans(t *testing.T) {
	t.Parallel()
	url := testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch")
	tp, spans := spantest.New(t)
	client, err := esclient.NewLazy(esclient.Config{URL: url, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	if err := esclient.Ping(client)(ctx); err != nil {
		testenv.Unavailable(t, "elasticsearch", err)
	}
	parent.End()
	var names []string
	for _, s := range spans.GetSpans() {
		names = append(names, s.Name)
		if s.Name == "cluster.health" {
			if s.Parent.SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("cluster.health span's parent = %v, want %v", s.Parent.SpanID(), parent.SpanContext().SpanID())
			}
			return
		}
	}
	t.Errorf("spans = %v, want a cluster.health span", names)
}

// authRecorder records the Authorization header and URL of each request on
// its way to the real cluster.
type authRecorder struct {
	mu    sync.Mutex
	auth  []string
	hosts []string
}

func (r *authRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	r.hosts = append(r.hosts, req.URL.String())
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// A URL's user and password (https://user:pw@host) authenticate every
// request with basic auth, and never travel in the URL itself. The local
// cluster has security off and answers either way; what the client sent
// is what is checked.
func TestURLCredentialsBecomeBasicAuth(t *testing.T) {
	t.Parallel()
	raw := testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("ops", "s3cret")
	rec := &authRecorder{}
	client, err := esclient.NewLazy(esclient.Config{URL: u.String(), Transport: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := esclient.Ping(client)(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:s3cret"))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.auth) == 0 || rec.auth[0] != want {
		t.Errorf("Authorization = %q, want %q", rec.auth, want)
	}
	for _, h := range rec.hosts {
		if strings.Contains(h, "s3cret") {
			t.Errorf("request URL %q carries the password", h)
		}
	}
}
