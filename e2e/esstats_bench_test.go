package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
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

// rawVersions lists every document of the indices matching pattern with its
// version (a scroll in index order, no _source).
func rawVersions(tb testing.TB, es *esclient.Client, pattern string) []scrollHit {
	tb.Helper()
	var out []scrollHit
	scrollAll(tb, es, pattern, `{"size":5000,"_source":false,"seq_no_primary_term":true,"sort":["_doc"]}`, func(hits []scrollHit) {
		out = append(out, hits...)
	})
	return out
}

// bareFlips writes, with a plain _bulk of batch operations per request,
// the write the classifier's status flip is: a partial update of
// classification_status, conditional on the version. It is the one raw
// write per document the design keeps, with nothing else around it.
func bareFlips(tb testing.TB, es *esclient.Client, docs []scrollHit, status string, batch int) {
	tb.Helper()
	for start := 0; start < len(docs); start += batch {
		var body bytes.Buffer
		for _, d := range docs[start:min(start+batch, len(docs))] {
			fmt.Fprintf(&body, `{"update":{"_index":%q,"_id":%q,"if_seq_no":%d,"if_primary_term":%d}}`+"\n", d.Index, d.ID, d.SeqNo, d.Term)
			fmt.Fprintf(&body, `{"doc":{"classification_status":%q}}`+"\n", status)
		}
		bulkOK(tb, es, body.Bytes(), "bare flips")
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
	refresh(tb, es, pattern)
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
	res, err := es.Nodes.Stats(es.Nodes.Stats.WithMetric("process,indices"), es.Nodes.Stats.WithIndexMetric("merge"),
		es.Nodes.Stats.WithContext(context.Background()))
	decodeResponse(tb, res, err, &parsed, "node stats")
	var f nodeFigures
	for _, n := range parsed.Nodes {
		f.cpuMillis += n.Process.CPU.TotalInMillis
		f.merging += n.Indices.Merges.Current
	}
	return f
}

// esCPUMillis returns the CPU time the Elasticsearch node has used, in
// milliseconds. When the node runs on this machine (the project's services
// do) it is read from /proc, exact to the clock tick: node stats refresh
// process.cpu only once a second, too coarse for a phase of a few seconds.
// Elsewhere, node stats.
func esCPUMillis(tb testing.TB, es *esclient.Client) int64 {
	tb.Helper()
	if ms, ok := localProcessCPUMillis(tb, es); ok {
		return ms
	}
	return readNodeFigures(tb, es).cpuMillis
}

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// Linux).
const userHZ = 100

// localProcessCPUMillis reads utime+stime of the single node's process
// from /proc, when that process is an Elasticsearch on this machine.
func localProcessCPUMillis(tb testing.TB, es *esclient.Client) (int64, bool) {
	tb.Helper()
	var parsed struct {
		Nodes map[string]struct {
			Process struct {
				ID int `json:"id"`
			} `json:"process"`
		} `json:"nodes"`
	}
	res, err := es.Nodes.Info(es.Nodes.Info.WithMetric("process"), es.Nodes.Info.WithContext(context.Background()))
	decodeResponse(tb, res, err, &parsed, "node info")
	if len(parsed.Nodes) != 1 {
		return 0, false
	}
	var pid int
	for _, n := range parsed.Nodes {
		pid = n.Process.ID
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte("org.elasticsearch")) {
		return 0, false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command's closing parenthesis: state is the
	// first (field 3), utime and stime are fields 14 and 15.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	fields := strings.Fields(string(rest))
	if len(fields) < 13 {
		tb.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	return (utime + stime) * 1000 / userHZ, true
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
	res, err := es.Indices.Stats(es.Indices.Stats.WithIndex(pattern), es.Indices.Stats.WithContext(context.Background()))
	decodeResponse(tb, res, err, &parsed, "index stats of "+pattern)
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

// readCPU returns Elasticsearch's CPU milliseconds per document for
// reading every document of the indices matching pattern once with the
// search body (a scroll; the body sets the page size and what is read).
func readCPU(tb testing.TB, es *esclient.Client, pattern string, body map[string]any, what string) float64 {
	tb.Helper()
	req, _ := json.Marshal(body)
	settleMerges(tb, es)
	cpu := esCPUMillis(tb, es)
	n := 0
	scrollAll(tb, es, pattern, string(req), func(hits []scrollHit) { n += len(hits) })
	spent := esCPUMillis(tb, es) - cpu
	if n == 0 {
		tb.Fatalf("no documents in %s to read", pattern)
	}
	tb.Logf("read %d raw documents, %s (%s): %d ms of Elasticsearch CPU", n, what, req, spent)
	return float64(spent) / float64(n)
}

// readBody is a scroll in index order of page documents per request, with
// their versions, reading what read adds.
func readBody(page int, read map[string]any) map[string]any {
	body := map[string]any{"size": page, "seq_no_primary_term": true, "sort": []string{"_doc"}}
	for k, v := range read {
		body[k] = v
	}
	return body
}

// bareReadCPU is readCPU reading each document as the poller does: its
// _source without raw_html. It is the floor of the reads of any design
// that finds the raw documents by searching the raw index.
func bareReadCPU(tb testing.TB, es *esclient.Client, pattern string, page int) float64 {
	tb.Helper()
	return readCPU(tb, es, pattern, readBody(page, map[string]any{"_source": map[string]any{"excludes": []string{"raw_html"}}}),
		"as the poller reads them")
}

// idReadCPU is readCPU reading no field at all, only each document's _id
// and version: the floor of reading a document of these indices at all.
// (_id is a stored field, read from the same compressed block as the
// _source, page included.)
func idReadCPU(tb testing.TB, es *esclient.Client, pattern string, page int) float64 {
	tb.Helper()
	return readCPU(tb, es, pattern, readBody(page, map[string]any{"_source": false}), "their ids only")
}

// bareCopyCPU returns Elasticsearch's CPU milliseconds per document for
// writing docs (classified documents as the drain wrote them) again into
// the new index target with the given mapping, with a plain _bulk of batch
// documents per request, its refresh and the merges it sets off. With the
// classified mapping it is the floor of the classified copy of any design
// that writes the classified document.
func bareCopyCPU(tb testing.TB, es *esclient.Client, docs []scrollHit, target string, mapping map[string]any, batch int) float64 {
	tb.Helper()
	if len(docs) == 0 {
		tb.Fatalf("no documents to copy into %s", target)
	}
	createIndex(tb, es, target, mapping)
	settleMerges(tb, es)
	times := indexTimes(tb, es, target)
	cpu := esCPUMillis(tb, es)
	for start := 0; start < len(docs); start += batch {
		bulkIndex(tb, es, target, docs[start:min(start+batch, len(docs))], "bare copy")
	}
	refresh(tb, es, target)
	settleMerges(tb, es)
	spent := esCPUMillis(tb, es) - cpu
	tb.Logf("Elasticsearch's time copying %d classified documents into %s with a bare _bulk (ms): %s", len(docs), target, indexTimes(tb, es, target).minus(times))
	return float64(spent) / float64(len(docs))
}

// storedReadCPU is readCPU reading the fields bareReadCPU reads, but from
// stored fields instead of the _source: the documents of the indices
// matching pattern are first copied (outside the measure) into the new
// index scratch, whose mapping stores every field but raw_html on its own
// (store: true). It is a what-if: the project's raw mapping stores no
// field.
func storedReadCPU(tb testing.TB, es *esclient.Client, pattern, scratch string, page int) float64 {
	tb.Helper()
	mapping := contentindex.RawMapping()
	var fields []string
	for name, p := range mapping["properties"].(map[string]any) {
		if name == "raw_html" {
			continue
		}
		p.(map[string]any)["store"] = true
		fields = append(fields, name)
	}
	createIndex(tb, es, scratch, mapping)
	scrollAll(tb, es, pattern, `{"size":200,"sort":["_doc"]}`, func(hits []scrollHit) {
		bulkIndex(tb, es, scratch, hits, "copy for stored fields")
	})
	refresh(tb, es, scratch)
	return readCPU(tb, es, scratch, readBody(page, map[string]any{"_source": false, "stored_fields": fields}),
		"from their stored fields")
}

// classifiedMappingUnindexedText is the classified mapping with raw_text
// kept but not indexed: the what-if of a classified copy that does not
// analyse the text again.
func classifiedMappingUnindexedText() map[string]any {
	m := contentindex.ClassifiedMapping()
	m["properties"].(map[string]any)["raw_text"] = map[string]any{"type": "text", "index": false}
	return m
}

// scrollDocs returns every document of the indices matching pattern with
// its _source.
func scrollDocs(tb testing.TB, es *esclient.Client, pattern string) []scrollHit {
	tb.Helper()
	var docs []scrollHit
	scrollAll(tb, es, pattern, `{"size":1000,"sort":["_doc"]}`, func(hits []scrollHit) { docs = append(docs, hits...) })
	return docs
}

func createIndex(tb testing.TB, es *esclient.Client, name string, mapping map[string]any) {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"settings": contentindex.Settings(), "mappings": mapping})
	res, err := es.Indices.Create(name, es.Indices.Create.WithBody(bytes.NewReader(body)),
		es.Indices.Create.WithContext(context.Background()))
	if err := esclient.CheckResponse("create "+name, res, err); err != nil {
		tb.Fatal(err)
	}
	res.Body.Close()
}

func refresh(tb testing.TB, es *esclient.Client, pattern string) {
	tb.Helper()
	res, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(pattern), es.Indices.Refresh.WithContext(context.Background()))
	if err := esclient.CheckResponse("refresh "+pattern, res, err); err != nil {
		tb.Fatal(err)
	}
	res.Body.Close()
}

// bulkIndex writes docs into index with one plain _bulk.
func bulkIndex(tb testing.TB, es *esclient.Client, index string, docs []scrollHit, what string) {
	tb.Helper()
	var body bytes.Buffer
	for _, d := range docs {
		fmt.Fprintf(&body, `{"index":{"_index":%q,"_id":%q}}`+"\n", index, d.ID)
		body.Write(d.Source)
		body.WriteByte('\n')
	}
	bulkOK(tb, es, body.Bytes(), what)
}

// scrollHit is a document a scroll returned.
type scrollHit struct {
	Index  string          `json:"_index"`
	ID     string          `json:"_id"`
	SeqNo  int64           `json:"_seq_no"`
	Term   int64           `json:"_primary_term"`
	Source json.RawMessage `json:"_source"`
}

// scrollAll runs the search body over the indices matching pattern as a
// scroll and hands each page of hits to each.
func scrollAll(tb testing.TB, es *esclient.Client, pattern, body string, each func([]scrollHit)) {
	tb.Helper()
	type page struct {
		ScrollID string `json:"_scroll_id"`
		Hits     struct {
			Hits []scrollHit `json:"hits"`
		} `json:"hits"`
	}
	decode := func(res *esapi.Response, err error) page {
		tb.Helper()
		var p page
		decodeResponse(tb, res, err, &p, "scroll "+pattern)
		return p
	}
	p := decode(es.Search(es.Search.WithContext(context.Background()), es.Search.WithIndex(pattern),
		es.Search.WithBody(strings.NewReader(body)), es.Search.WithScroll(time.Minute)))
	for len(p.Hits.Hits) > 0 {
		each(p.Hits.Hits)
		p = decode(es.Scroll(es.Scroll.WithContext(context.Background()), es.Scroll.WithScrollID(p.ScrollID),
			es.Scroll.WithScroll(time.Minute)))
	}
	if res, err := es.ClearScroll(es.ClearScroll.WithScrollID(p.ScrollID)); err == nil {
		res.Body.Close()
	}
}

// bulkOK sends one _bulk body and fails on any error, the items' included.
func bulkOK(tb testing.TB, es *esclient.Client, body []byte, what string) {
	tb.Helper()
	var parsed struct {
		Errors bool `json:"errors"`
	}
	res, err := es.Bulk(bytes.NewReader(body), es.Bulk.WithContext(context.Background()))
	decodeResponse(tb, res, err, &parsed, what)
	if parsed.Errors {
		tb.Fatalf("%s: some items failed", what)
	}
}

// decodeResponse fails on a request's error or error status
// (esclient.CheckResponse, which names the answer) and decodes its body
// into v.
func decodeResponse(tb testing.TB, res *esapi.Response, err error, v any, what string) {
	tb.Helper()
	if err := esclient.CheckResponse(what, res, err); err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}
