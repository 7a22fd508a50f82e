// Package loadgen generates realistic raw documents, as a crawler would write
// them, for demos, tests and benchmarks, and loads them into Elasticsearch
// with the bulk API.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// Kind is the kind of page generated; it decides the expected routing.
type Kind string

// Kinds, each with its share of a generated corpus.
const (
	KindCrimeViolent  Kind = "crime_violent"
	KindCrimeProperty Kind = "crime_property"
	KindCrimeDrug     Kind = "crime_drug"
	KindNews          Kind = "news"
	KindVideo         Kind = "video"
	KindImage         Kind = "image"
	KindListing       Kind = "listing"
)

var kinds = []Kind{KindCrimeViolent, KindCrimeProperty, KindCrimeDrug, KindNews, KindNews, KindNews, KindVideo, KindImage, KindListing}

// Generator makes documents deterministically from a seed.
type Generator struct {
	rng *rand.Rand
	now func() time.Time
}

// NewGenerator returns a generator; the same seed gives the same corpus.
func NewGenerator(seed uint64) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: time.Now}
}

// Document returns the n-th document of source, of a kind drawn from the mix.
func (g *Generator) Document(source string, n int) contentindex.RawDocument {
	return g.DocumentOfKind(source, n, kinds[g.rng.IntN(len(kinds))])
}

// DocumentOfKind returns the n-th document of source, of the given kind.
func (g *Generator) DocumentOfKind(source string, n int, kind Kind) contentindex.RawDocument {
	id := fmt.Sprintf("%s-%06d-%04x", source, n, g.rng.Uint32()&0xffff)
	crawled := g.now().UTC().Add(-time.Duration(g.rng.IntN(3600)) * time.Second)
	published := crawled.Add(-time.Duration(g.rng.IntN(48)) * time.Hour)
	doc := contentindex.RawDocument{
		ID:                   id,
		SourceName:           source,
		URL:                  fmt.Sprintf("https://%s.example.com/news/%d/%s", source, crawled.Year(), id),
		CrawledAt:            crawled,
		PublishedDate:        published.Format(time.RFC3339),
		ClassificationStatus: contentindex.StatusPending,
		OGType:               "article",
	}
	var topic string
	switch kind {
	case KindCrimeViolent:
		topic = "Police investigate a fatal shooting downtown; a second victim was treated after an assault nearby."
		doc.Title = "Man charged with murder after downtown shooting"
	case KindCrimeProperty:
		topic = "Residents reported a burglary and the theft of two cars; police say stolen property was recovered."
		doc.Title = "Break-in wave: police link burglary to stolen vehicles"
	case KindCrimeDrug:
		topic = "Officers seized fentanyl and cocaine in a drug trafficking investigation spanning three provinces."
		doc.Title = "Drug trafficking ring dismantled, fentanyl seized"
	case KindNews:
		topic = "The city council met on Tuesday and the mayor announced the budget ahead of the election."
		doc.Title = "Council approves budget as mayor looks to election"
	case KindVideo:
		topic = "Watch the highlights from last night's hockey game as the coach reacts to the playoffs race."
		doc.Title = "Video: playoff highlights"
		doc.OGType = "video.other"
	case KindImage:
		topic = "A gallery of photos from the storm that brought record snowfall to the region this week."
		doc.Title = "Photos: storm brings record snowfall"
		doc.OGType = "image"
	case KindListing:
		topic = "Latest stories in this section."
		doc.Title = "Local news"
		doc.OGType = "website"
		doc.URL = fmt.Sprintf("https://%s.example.com/category/local/page/%d", source, 1+g.rng.IntN(20))
	}
	doc.MetaDescription = topic
	doc.RawText = g.body(topic, kind == KindListing)
	doc.WordCount = len(strings.Fields(doc.RawText))
	return doc
}

var filler = []string{
	"Officials said more details would be released later in the week.",
	"Residents in the area described the scene to reporters on Monday.",
	"The announcement follows months of discussion among community groups.",
	"Several witnesses spoke with investigators at the scene.",
	"The report was shared with the public after a lengthy review process.",
	"Local businesses said they were watching the situation closely.",
	"A spokesperson declined to comment further on the matter.",
	"Updates will be posted as more information becomes available.",
}

func (g *Generator) body(lead string, short bool) string {
	n := 20 + g.rng.IntN(40)
	if short {
		n = 2
	}
	var b strings.Builder
	b.WriteString(lead)
	for range n {
		b.WriteByte(' ')
		b.WriteString(filler[g.rng.IntN(len(filler))])
	}
	return b.String()
}

// Load writes docs into their raw indices (RawIndex of each SourceName) with
// one bulk request per batch of batchSize, calling progress after each batch
// with the running total. Creating the indices is left to the index templates.
func Load(ctx context.Context, es *esclient.Client, docs []contentindex.RawDocument, batchSize int, progress func(done int)) error {
	batchSize = config.PositiveOr(batchSize, 500)
	for start := 0; start < len(docs); start += batchSize {
		end := min(start+batchSize, len(docs))
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, d := range docs[start:end] {
			if err := enc.Encode(map[string]any{"index": map[string]any{"_index": contentindex.RawIndex(d.SourceName), "_id": d.ID}}); err != nil {
				return fmt.Errorf("load: %w", err)
			}
			if err := enc.Encode(d); err != nil {
				return fmt.Errorf("load %s: %w", d.ID, err)
			}
		}
		res, err := es.Bulk(&buf, es.Bulk.WithContext(ctx))
		if err := esclient.CheckResponse("load raw documents", res, err); err != nil {
			return err
		}
		var parsed struct {
			Errors bool `json:"errors"`
			Items  []map[string]struct {
				ID    string          `json:"_id"`
				Error json.RawMessage `json:"error"`
			} `json:"items"`
		}
		err = json.NewDecoder(res.Body).Decode(&parsed)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil {
			return fmt.Errorf("load: decode bulk response: %w", err)
		}
		if parsed.Errors {
			for _, item := range parsed.Items {
				for _, r := range item {
					if len(r.Error) > 0 && string(r.Error) != "null" {
						return fmt.Errorf("load %s: elasticsearch rejected it: %s", r.ID, r.Error)
					}
				}
			}
		}
		if progress != nil {
			progress(end)
		}
	}
	return nil
}
