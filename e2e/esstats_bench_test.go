package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// settleMerges waits until the Elasticsearch node runs no merge, so that the
// merges a phase's writes set off are counted to that phase's CPU and not
// to the next one's.
func settleMerges(tb testing.TB, es *esclient.Client) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if mergesRunning(tb, es) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("Elasticsearch still merging 10 minutes after the writes ended")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// rawVersion is a raw document's address and the version a conditional
// write names.
type rawVersion struct {
	index, id   string
	seqNo, term int64
}

// rawVersions lists every document of the indices matching pattern with its
// version (a scroll in index order, no _source).
func rawVersions(tb testing.TB, es *esclient.Client, pattern string) []rawVersion {
	tb.Helper()
	type page struct {
		ScrollID string `json:"_scroll_id"`
		Hits     struct {
			Hits []struct {
				Index string `json:"_index"`
				ID    string `json:"_id"`
				SeqNo int64  `json:"_seq_no"`
				Term  int64  `json:"_primary_term"`
			} `json:"hits"`
		} `json:"hits"`
	}
	decode := func(res *esapi.Response, err error) page {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		defer res.Body.Close()
		var p page
		if err := json.NewDecoder(res.Body).Decode(&p); err != nil || res.IsError() {
			tb.Fatalf("list %s: %v (%s)", pattern, err, res.Status())
		}
		return p
	}
	body := `{"size":5000,"_source":false,"seq_no_primary_term":true,"sort":["_doc"]}`
	p := decode(es.Search(es.Search.WithContext(context.Background()), es.Search.WithIndex(pattern),
		es.Search.WithBody(strings.NewReader(body)), es.Search.WithScroll(time.Minute)))
	var out []rawVersion
	for len(p.Hits.Hits) > 0 {
		for _, h := range p.Hits.Hits {
			out = append(out, rawVersion{h.Index, h.ID, h.SeqNo, h.Term})
		}
		p = decode(es.Scroll(es.Scroll.WithContext(context.Background()), es.Scroll.WithScrollID(p.ScrollID),
			es.Scroll.WithScroll(time.Minute)))
	}
	if res, err := es.ClearScroll(es.ClearScroll.WithScrollID(p.ScrollID)); err == nil {
		res.Body.Close()
	}
	return out
}

// bareFlips writes, with a plain _bulk of batch operations per request,
// the write the classifier's status flip is: a partial update of
// classification_status, conditional on the version. It is the one raw
// write per document the design keeps, with nothing else around it.
func bareFlips(tb testing.TB, es *esclient.Client, docs []rawVersion, status string, batch int) {
	tb.Helper()
	for start := 0; start < len(docs); start += batch {
		var body bytes.Buffer
		for _, d := range docs[start:min(start+batch, len(docs))] {
			fmt.Fprintf(&body, `{"update":{"_index":%q,"_id":%q,"if_seq_no":%d,"if_primary_term":%d}}`+"\n", d.index, d.id, d.seqNo, d.term)
			fmt.Fprintf(&body, `{"doc":{"classification_status":%q}}`+"\n", status)
		}
		res, err := es.Bulk(bytes.NewReader(body.Bytes()), es.Bulk.WithContext(context.Background()))
		if err != nil {
			tb.Fatal(err)
		}
		var parsed struct {
			Errors bool `json:"errors"`
		}
		err = json.NewDecoder(res.Body).Decode(&parsed)
		res.Body.Close()
		if err != nil || res.IsError() || parsed.Errors {
			tb.Fatalf("bare flips: %v (%s, item errors %t)", err, res.Status(), parsed.Errors)
		}
	}
}

// bareFlipCPU returns Elasticsearch's CPU milliseconds per document for
// flipping every document of the indices matching pattern once with
// bareFlips (to status failed: a value none of them has, so no write is a
// no-op), its refresh and the merges it sets off. Nothing else may write to
// those indices meanwhile.
func bareFlipCPU(tb testing.TB, es *esclient.Client, pattern string, batch int) float64 {
	tb.Helper()
	docs := rawVersions(tb, es, pattern)
	if len(docs) == 0 {
		tb.Fatalf("no documents in %s to flip", pattern)
	}
	settleMerges(tb, es)
	times := indexTimes(tb, es, pattern)
	cpu := esCPUMillis(tb, es)
	bareFlips(tb, es, docs, contentindex.StatusFailed, batch)
	if res, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(pattern)); err != nil {
		tb.Fatal(err)
	} else {
		res.Body.Close()
	}
	settleMerges(tb, es)
	spent := esCPUMillis(tb, es) - cpu
	tb.Logf("Elasticsearch's time flipping %d raw documents with a bare _bulk (ms): %s", len(docs), indexTimes(tb, es, pattern).minus(times))
	return float64(spent) / float64(len(docs))
}

// nodeFigures is what the benchmarks read of the Elasticsearch node (one
// node: they run on the single-node service).
type nodeFigures struct {
	// cpuMillis is the CPU time the node's process has used (node stats
	// process.cpu.total_in_millis).
	cpuMillis int64
	// merging is the merges it runs now (indices.merges.current).
	merging int64
}

func readNodeFigures(tb testing.TB, es *esclient.Client) nodeFigures {
	tb.Helper()
	res, err := es.Nodes.Stats(es.Nodes.Stats.WithMetric("process,indices"), es.Nodes.Stats.WithIndexMetric("merge"),
		es.Nodes.Stats.WithContext(context.Background()))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	var parsed struct {
		Nodes map[string]struct {
			Process struct {
				CPU struct {
					TotalInMillis int64 `json:"total_in_millis"`
				} `json:"cpu"`
			} `json:"process"`
			Indices struct {
				Merges struct {
					Current int64 `json:"current"`
				} `json:"merges"`
			} `json:"indices"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil || res.IsError() {
		tb.Fatalf("node stats: %v (%s)", err, res.Status())
	}
	var f nodeFigures
	for _, n := range parsed.Nodes {
		f.cpuMillis += n.Process.CPU.TotalInMillis
		f.merging += n.Indices.Merges.Current
	}
	return f
}

func esCPUMillis(tb testing.TB, es *esclient.Client) int64 {
	tb.Helper()
	return readNodeFigures(tb, es).cpuMillis
}

func mergesRunning(tb testing.TB, es *esclient.Client) int64 {
	tb.Helper()
	return readNodeFigures(tb, es).merging
}

// esTimes is where an index pattern's time went (index stats of the
// primaries, milliseconds: the time the operations took, not CPU).
type esTimes struct {
	Indexing, Query, Fetch, Refresh, Merge, Flush int64
}

func (t esTimes) minus(o esTimes) esTimes {
	return esTimes{t.Indexing - o.Indexing, t.Query - o.Query, t.Fetch - o.Fetch,
		t.Refresh - o.Refresh, t.Merge - o.Merge, t.Flush - o.Flush}
}

func (t esTimes) String() string {
	return fmt.Sprintf("indexing %d, query %d, fetch %d, refresh %d, merge %d, flush %d",
		t.Indexing, t.Query, t.Fetch, t.Refresh, t.Merge, t.Flush)
}

// indexFigures is what the benchmarks read of the indices matching a
// pattern (index stats of the primaries).
type indexFigures struct {
	// ops is the indexing operations taken: every index, update and
	// conditional write of a document (indexing.index_total).
	ops   int64
	times esTimes
}

func readIndexFigures(tb testing.TB, es *esclient.Client, pattern string) indexFigures {
	tb.Helper()
	res, err := es.Indices.Stats(es.Indices.Stats.WithIndex(pattern), es.Indices.Stats.WithContext(context.Background()))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	var parsed struct {
		All struct {
			Primaries struct {
				Indexing struct {
					Total int64 `json:"index_total"`
					Ms    int64 `json:"index_time_in_millis"`
				} `json:"indexing"`
				Search struct {
					Query int64 `json:"query_time_in_millis"`
					Fetch int64 `json:"fetch_time_in_millis"`
				} `json:"search"`
				Refresh struct {
					Ms int64 `json:"total_time_in_millis"`
				} `json:"refresh"`
				Merges struct {
					Ms int64 `json:"total_time_in_millis"`
				} `json:"merges"`
				Flush struct {
					Ms int64 `json:"total_time_in_millis"`
				} `json:"flush"`
			} `json:"primaries"`
		} `json:"_all"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil || res.IsError() {
		tb.Fatalf("index stats of %s: %v (%s)", pattern, err, res.Status())
	}
	p := parsed.All.Primaries
	return indexFigures{ops: p.Indexing.Total,
		times: esTimes{p.Indexing.Ms, p.Search.Query, p.Search.Fetch, p.Refresh.Ms, p.Merges.Ms, p.Flush.Ms}}
}

func rawIndexOps(tb testing.TB, es *esclient.Client, pattern string) int64 {
	tb.Helper()
	return readIndexFigures(tb, es, pattern).ops
}

func indexTimes(tb testing.TB, es *esclient.Client, pattern string) esTimes {
	tb.Helper()
	return readIndexFigures(tb, es, pattern).times
}
