package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// TestRuleEditChangesNextClassification creates a rule through the running
// classifier's API and sees it change the classification of the next
// document, with no restart; an unprocessable document shows up in the DLQ
// API, where its retry is refused: VALIDATION_ERROR is permanent.
func TestRuleEditChangesNextClassification(t *testing.T) {
	t.Parallel()
	classifierDB := testenv.Postgres(t)
	publisherDB := testenv.Postgres(t)
	es, prefix := testenv.Elasticsearch(t)
	migrateOutbox(t, publisherDB)
	classifier := startService(t, "classifier", map[string]string{
		"CLASSIFIER_DATABASE_URL":        classifierDB,
		"CLASSIFIER_OUTBOX_DATABASE_URL": testenv.WithUser(t, publisherDB, "classifier", "classifier"),
		"CLASSIFIER_INDEX_PATTERN":       prefix + "*" + contentindex.RawSuffix,
		"CLASSIFIER_POLL_INTERVAL":       "200ms",
	})
	token := authtest.EnvToken(t, "e2e@example.org", auth.RoleOperator)
	api := func(method, path string, body any, out any) int {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, "http://"+classifier.addr+"/api/v1"+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if out != nil {
			_ = json.NewDecoder(res.Body).Decode(out)
		}
		return res.StatusCode
	}

	source := prefix + "_air"
	text := "The zeppelin hangar reopened and an airship flew over the harbour on Sunday."
	putRaw(t, es, source, "before", "https://air.example.com/a", text)
	before := waitClassified(t, es, source, "before")
	if slices.Contains(before.Topics, "aviation") {
		t.Fatalf("classified as aviation before the rule existed: %v", before.Topics)
	}

	rule := map[string]any{"name": "aviation " + prefix, "topic": "aviation", "keywords": []string{"zeppelin", "airship", "hangar"},
		"min_confidence": 0.3, "priority": 20, "enabled": true}
	if code := api("POST", "/rules", rule, nil); code != http.StatusCreated {
		t.Fatalf("create rule = %d", code)
	}
	// The running engine picks the rule up (hot reload, no restart): the
	// playground, which runs on the live engine, starts matching it.
	waitFor(t, 10*time.Second, "the new rule in the live engine", func() bool {
		var res struct {
			Matches []struct {
				Topic string `json:"topic"`
			} `json:"matches"`
		}
		api("POST", "/rules/test", map[string]string{"text": text}, &res)
		for _, m := range res.Matches {
			if m.Topic == "aviation" {
				return true
			}
		}
		return false
	})
	putRaw(t, es, source, "after", "https://air.example.com/b", text)
	after := waitClassified(t, es, source, "after")
	if !slices.Contains(after.Topics, "aviation") {
		t.Errorf("document classified after the rule was created has topics %v, want aviation", after.Topics)
	}

	// An unprocessable document lands in the DLQ, visible, and not retried.
	putRaw(t, es, source, "ftp", "ftp://air.example.com/c", text)
	var page struct {
		Entries []struct {
			ID        string `json:"id"`
			ContentID string `json:"content_id"`
			ErrorCode string `json:"error_code"`
		} `json:"entries"`
	}
	waitFor(t, 30*time.Second, "the ftp document in the DLQ API", func() bool {
		api("GET", "/dlq?source="+source, nil, &page)
		return len(page.Entries) == 1
	})
	if page.Entries[0].ContentID != "ftp" || page.Entries[0].ErrorCode != "VALIDATION_ERROR" {
		t.Errorf("DLQ entry = %+v, want ftp with VALIDATION_ERROR", page.Entries[0])
	}
	var refused struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if code := api("POST", "/dlq/"+page.Entries[0].ID+"/requeue", nil, &refused); code != 409 || !strings.Contains(refused.Error.Message, "VALIDATION_ERROR is permanent") {
		t.Errorf("requeue of a VALIDATION_ERROR entry = %d %+v, want 409 with the reason", code, refused)
	}
}

type classified struct {
	Topics []string `json:"topics"`
}

func putRaw(t *testing.T, es *esclient.Client, source, id, url, text string) {
	t.Helper()
	doc := contentindex.RawDocument{ID: id, URL: url, SourceName: source, Title: "Harbour news", RawText: text,
		CrawledAt: time.Now().UTC(), ClassificationStatus: contentindex.StatusPending, OGType: "article"}
	body, _ := json.Marshal(doc)
	res, err := es.Index(contentindex.RawIndex(source), bytes.NewReader(body), es.Index.WithDocumentID(id), es.Index.WithRefresh("true"))
	if err != nil || res.IsError() {
		t.Fatalf("index raw %s: %v %v", id, err, res)
	}
	res.Body.Close()
}

func waitClassified(t *testing.T, es *esclient.Client, source, id string) classified {
	t.Helper()
	var out classified
	waitFor(t, 30*time.Second, "document "+id+" classified", func() bool {
		res, err := es.Get(contentindex.ClassifiedIndex(source), id, es.Get.WithContext(context.Background()))
		if err != nil {
			return false
		}
		defer res.Body.Close()
		if res.IsError() {
			return false
		}
		var got struct {
			Source classified `json:"_source"`
		}
		if json.NewDecoder(res.Body).Decode(&got) != nil {
			return false
		}
		out = got.Source
		return true
	})
	return out
}
