package esclient_test

import (
	"context"
	"strings"
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
