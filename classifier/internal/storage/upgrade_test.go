package storage_test

import (
	"context"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// A classified index created with an older strict mapping (by an older
// replica's template) that lacks a field this version writes does not fail
// the document: the missing fields are added and it is written again.
func TestWriteClassifiedAddsFieldsAnOlderMappingLacks(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	index := contentindex.ClassifiedIndex(prefix + "old")
	res, err := es.Indices.Create(index, es.Indices.Create.WithBody(strings.NewReader(
		`{"mappings":{"dynamic":"strict","properties":{"id":{"type":"keyword"},"url":{"type":"keyword"}}}}`)))
	if err := esclient.CheckResponse("create old classified index", res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	doc := &domain.ClassifiedContent{ID: "d1", URL: "https://old.test/1", Index: index, Title: "t", RawText: "body",
		ClassificationStatus: contentindex.StatusClassified, ProcessingStrategy: "standard", IsProcessable: true, URLClass: "web_page"}
	results, err := storage.NewContentStore(es).WriteClassified(context.Background(), []*domain.ClassifiedContent{doc})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Err != nil {
		t.Fatalf("results = %+v, want the document written", results)
	}
}
