package esclient_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
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
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil))
	_, err := esclient.New(context.Background(), esclient.Config{URL: "http://elastic:s3cr3t-pw@127.0.0.1:1", ConnectTimeout: 600 * time.Millisecond}, log)
	if err == nil || strings.Contains(err.Error(), "s3cr3t-pw") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("err = %v, want a connect error naming the host without the password", err)
	}
	if strings.Contains(logs.String(), "s3cr3t-pw") || !strings.Contains(logs.String(), "not reachable yet") {
		t.Fatalf("logs leak the password or lack the retry line: %s", logs.String())
	}
	for raw, want := range map[string]string{
		"https://elastic:pw@es:9200":         "https://elastic:xxxxx@es:9200",
		"http://127.0.0.1:9200":              "http://127.0.0.1:9200",
		"https://es:9200/?api_key=topsecret": "https://es:9200/?api_key=xxxxx",
	} {
		if got := esclient.Redact(raw); got != want {
			t.Errorf("Redact(%q) = %q, want %q", raw, got, want)
		}
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
