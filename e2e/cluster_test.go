package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// The tests of this file run the pipeline on the clusters of
// scripts/services.sh (NC_ES_NODES=3, NC_REDIS_CLUSTER=1) and kill a node of
// one of them mid-drain. They are selected by those settings: without them
// they skip (a single node has no node to lose), and with them, under
// CI=true, a cluster that does not answer fails the test. They are not
// parallel: a killed node must not disturb other tests, and every test of
// the package that runs after them finds the cluster whole again. They
// restart the node they killed with `scripts/services.sh up`, so they run as
// root, as that command does. Their names start with TestCluster, so the
// main test stage leaves them out (-skip '^TestCluster') and the cluster
// stage of scripts/test.sh runs them.

// esCluster is the Elasticsearch cluster the test runs against.
type esCluster struct {
	urls  string // every node, comma-separated (ELASTICSEARCH_URL's list form)
	nodes int
	es    *esclient.Client
}

// clusterES returns the cluster named by NC_ES_NODES and NC_ES_CLUSTER_URLS
// once all its nodes have joined, or skips the test when no cluster is
// asked for.
func clusterES(t *testing.T) *esCluster {
	t.Helper()
	nodes, _ := strconv.Atoi(os.Getenv("NC_ES_NODES"))
	if nodes < 2 {
		t.Skip("no Elasticsearch cluster asked for: start one with `sudo NC_ES_NODES=3 scripts/services.sh up` and " +
			"`eval \"$(NC_ES_NODES=3 scripts/services.sh env)\"`")
	}
	urls := testenv.Env(t, "NC_ES_CLUSTER_URLS", "elasticsearch cluster")
	es, err := esclient.NewLazy(esclient.Config{URL: urls})
	if err != nil {
		t.Fatalf("cluster client: %v", err)
	}
	c := &esCluster{urls: urls, nodes: nodes, es: es}
	var h struct {
		Nodes  int    `json:"number_of_nodes"`
		Status string `json:"status"`
	}
	if err := c.tryGet(fmt.Sprintf("/_cluster/health?wait_for_nodes=%d&wait_for_status=yellow&timeout=60s", nodes), &h); err != nil || h.Nodes != nodes {
		testenv.Unavailable(t, "elasticsearch cluster", fmt.Errorf("%d of %d nodes joined (%v)", h.Nodes, nodes, err))
	}
	return c
}

func (c *esCluster) tryGet(path string, out any) error {
	req, err := http.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	res, err := c.es.Perform(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, res.StatusCode, buf.String())
	}
	return json.Unmarshal(buf.Bytes(), out)
}

func (c *esCluster) get(t *testing.T, path string, out any) {
	t.Helper()
	if err := c.tryGet(path, out); err != nil {
		t.Fatal(err)
	}
}

// shardCopy is one copy of a shard as _cat/shards lists it.
type shardCopy struct {
	Index  string `json:"index"`
	Shard  string `json:"shard"`
	Prirep string `json:"prirep"`
	State  string `json:"state"`
	Node   string `json:"node"`
}

func (c *esCluster) shards(index string) ([]shardCopy, error) {
	var out []shardCopy
	err := c.tryGet("/_cat/shards/"+index+"?format=json&h=index,shard,prirep,state,node", &out)
	return out, err
}

// primaryNode is the node holding the started primary of index ("" when
// none is started).
func (c *esCluster) primaryNode(index string) string {
	shards, err := c.shards(index)
	if err != nil {
		return ""
	}
	for _, s := range shards {
		if s.Prirep == "p" && s.State == "STARTED" {
			return s.Node
		}
	}
	return ""
}

// nodePID returns the process id of the node's JVM, as the node reports it.
func (c *esCluster) nodePID(t *testing.T, node string) int {
	t.Helper()
	var info struct {
		Nodes map[string]struct {
			Name    string `json:"name"`
			Process struct {
				ID int `json:"id"`
			} `json:"process"`
		} `json:"nodes"`
	}
	c.get(t, "/_nodes/process", &info)
	for _, n := range info.Nodes {
		if n.Name == node && n.Process.ID > 1 {
			return n.Process.ID
		}
	}
	t.Fatalf("node %s not found in _nodes/process: %+v", node, info.Nodes)
	return 0
}

func (c *esCluster) master(t *testing.T) string {
	t.Helper()
	var m []struct {
		Node string `json:"node"`
	}
	c.get(t, "/_cat/master?format=json", &m)
	if len(m) == 0 {
		return ""
	}
	return m[0].Node
}

// killPID sends SIGKILL and waits until the process is gone.
func killPID(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL %d: %v (the cluster tests run as root, as scripts/services.sh up does)", pid, err)
	}
	for range 300 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("process %d still alive 30s after SIGKILL", pid)
}

// restartNode runs testenv.ServicesUp in the background: it starts whatever
// node of the clusters is not running and waits until the cluster is whole.
// The test waits for the answer before it ends.
func restartNode() <-chan error {
	done := make(chan error, 1)
	go func() { done <- testenv.ServicesUp() }()
	return done
}

// historyTwice counts the documents with more than one classification in
// the classifier's history: each is a claim that was classified, lost and
// classified again under a new claim.
func historyTwice(t testing.TB, classifierDB string) (docs, twice int) {
	t.Helper()
	queryRow(t, classifierDB, "the classification history", `SELECT COUNT(*), COUNT(*) FILTER (WHERE n > 1) FROM
		(SELECT COUNT(*) AS n FROM classification_history GROUP BY index_name, content_id) h`, &docs, &twice)
	return docs, twice
}

// outboxRows counts the outbox rows and the distinct documents among them.
func outboxRows(t testing.TB, publisherDB string) (rows, distinct int) {
	t.Helper()
	queryRow(t, publisherDB, "the outbox", `SELECT COUNT(*), COUNT(DISTINCT (source_name, content_id)) FROM classified_outbox`, &rows, &distinct)
	return rows, distinct
}

// TestClusterElasticsearchNodeKilledMidDrain drains 1,500 documents of one
// source through a classifier and a publisher that know every node of a
// 3-node cluster, and SIGKILLs the data node holding the primary of the raw
// index mid-drain, right after a bulk write of 100 more documents to that
// index was acknowledged. The replica on another node is promoted; claims
// and commits are optimistic writes (if_seq_no/if_primary_term) to that
// shard, so any of them caught by the failover conflicts or fails and the
// document comes back after its lease. It must hold: the acknowledged
// documents exist after the failover; no flip acknowledged before the kill
// is undone; every document is delivered exactly once, with one outbox row
// each. The node is started again once the replica is promoted, so it
// rejoins and recovers its copies during the drain. The figures are printed
// as a `cluster-es:` line.
func TestClusterElasticsearchNodeKilledMidDrain(t *testing.T) {
	c := clusterES(t)
	st := sharedStack(t)
	st.es, st.esURL = c.es, c.urls
	source := st.prefix + "_failover"
	raw := contentindex.RawIndex(source)

	docs := healthyDocs(source, 1500, 61)
	loadDocs(t, st.es, docs)
	var h struct {
		Status string `json:"status"`
	}
	c.get(t, "/_cluster/health/"+raw+"?wait_for_status=green&timeout=60s", &h)
	if h.Status != "green" {
		t.Fatalf("%s is %s before the drain, want green (a replica on a second node)", raw, h.Status)
	}
	sub := subscribe(t, st.rdb, st.prefix)
	publisher := launch(t, "publisher", "publisher", st.publisherEnv(nil))
	replica := "e2e-" + st.prefix
	classifier := launch(t, "classifier", "classifier", st.classifierEnv(replica, map[string]string{
		// Slow enough that the kill lands mid-drain; a short lease so a
		// claim lost to the failover comes back soon.
		"CLASSIFIER_BATCH_SIZE":      "100",
		"CLASSIFIER_CONCURRENCY":     "2",
		"CLASSIFIER_CLAIM_LEASE":     "10s",
		"CLASSIFIER_CLAIM_HEARTBEAT": "3s",
	}))

	waitMidBatch(t, sub, st.classifierDB, replica, 300, 1, 90*time.Second)

	// Acknowledged just before the kill: 100 more documents in the same
	// shard, and every flip to classified so far.
	rng := rand.New(rand.NewPCG(62, 63))
	acked := make([]contentindex.RawDocument, 100)
	for i := range acked {
		acked[i] = healthyDoc(source, fmt.Sprintf("%s-acked-%03d", source, i), time.Now().Add(-2*time.Hour), rng)
	}
	loadDocs(t, st.es, acked)
	flipped := rawStates(t, st.es, raw, map[string]any{"term": map[string]any{"classification_status": contentindex.StatusClassified}})
	claimedAtKill, _ := countClaimed(st.classifierDB, replica)
	victim, master := c.primaryNode(raw), c.master(t)
	if victim == "" {
		t.Fatalf("no started primary of %s", raw)
	}
	pid := c.nodePID(t, victim)
	_, deliveredAtKill, _, _ := sub.Stats()
	killPID(t, pid)
	killed := time.Now()
	t.Logf("SIGKILLed %s (pid %d, holding the primary of %s; elected master %s) with %d of %d delivered, %d claims held, %d flips acknowledged",
		victim, pid, raw, master, deliveredAtKill, len(docs)+len(acked), claimedAtKill, len(flipped))

	// The failover: the replica is promoted on another node.
	var promoted time.Duration
	for deadline := testenv.GiveUpAt(t, 90*time.Second); ; {
		if n := c.primaryNode(raw); n != "" && n != victim {
			promoted = time.Since(killed)
			t.Logf("primary of %s promoted on %s %s after the kill", raw, n, promoted.Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no primary of %s on another node %s after the kill", raw, time.Since(killed).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
	restarted := restartNode()

	keys := append(keysOf(docs), keysOf(acked)...)
	missing := sub.WaitAll(t, keys, 180*time.Second)
	time.Sleep(3 * time.Second) // a second copy would arrive right behind the first
	total, distinct, dups, last := sub.Stats()
	var firstAfter time.Time
	for _, k := range keys {
		sub.mu.Lock()
		d := sub.byKey[k]
		sub.mu.Unlock()
		if d != nil && d.at.After(killed) && (firstAfter.IsZero() || d.at.Before(firstAfter)) {
			firstAfter = d.at
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d documents not delivered (no delivery for 180s after the kill), e.g. %s\nclassifier:\n%s",
			len(missing), len(keys), missing[0], logLines(classifier.Output(), 15, "level=ERROR", "level=WARN"))
	}
	if dups > 0 {
		t.Errorf("%d duplicate messages: a document was published more than once", dups)
	}

	// Nothing acknowledged before the kill is lost.
	after := rawStates(t, st.es, raw, nil)
	lostAcked := 0
	for _, k := range keysOf(acked) {
		if _, ok := after[k]; !ok {
			lostAcked++
		}
	}
	undone := 0
	for k := range flipped {
		if after[k].ClassificationStatus != contentindex.StatusClassified {
			undone++
		}
	}
	notClassified := 0
	for _, k := range keys {
		if after[k].ClassificationStatus != contentindex.StatusClassified {
			notClassified++
		}
	}
	if lostAcked > 0 || undone > 0 || notClassified > 0 {
		t.Errorf("after the failover: %d of %d acknowledged documents missing, %d of %d acknowledged flips undone, %d documents not classified",
			lostAcked, len(acked), undone, len(flipped), notClassified)
	}
	rows, distinctRows := outboxRows(t, st.publisherDB)
	if rows != len(keys) || distinctRows != len(keys) {
		t.Errorf("outbox has %d rows (%d distinct documents), want one per document (%d)", rows, distinctRows, len(keys))
	}
	historyDocs, twice := historyTwice(t, st.classifierDB)
	out := classifier.Output()
	lostClaims := strings.Count(out, "claim lost") + strings.Count(out, "claims were refused") + strings.Count(out, "status flip failed")
	t.Logf("classifier lines about claims or flips caught by the failover:\n%s",
		logLines(out, 10, "claim lost", "claims were refused", "status flip failed", "breaker"))

	recovered := time.Duration(0)
	if !firstAfter.IsZero() {
		recovered = firstAfter.Sub(killed)
	}
	fmt.Printf("cluster-es: documents=%d delivered=%d messages=%d duplicates=%d classified_twice=%d history_docs=%d outbox_rows=%d "+
		"claims_at_kill=%d lost_claim_or_flip_lines=%d primary_promoted=%s first_delivery_after_kill=%s last_delivery_after_kill=%s\n",
		len(keys), distinct, total, dups, twice, historyDocs, rows, claimedAtKill, lostClaims,
		promoted.Round(time.Millisecond), recovered.Round(time.Millisecond), last.Sub(killed).Round(time.Millisecond))
	checkNoCrash(t, classifier, publisher)

	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	c.get(t, "/_cluster/health/"+raw+"?wait_for_status=green&timeout=120s", &h)
	t.Logf("%s restarted and %s %s again %s after the kill", victim, raw, h.Status, time.Since(killed).Round(time.Second))
	if h.Status != "green" {
		t.Errorf("%s is %s after the node came back, want green", raw, h.Status)
	}
}

// publisherChannels are every channel the publisher routes to (its
// RoutingKey): a sharded subscriber has no patterns, it names each one.
var publisherChannels = []string{
	"articles:crime:violent_crime", "articles:crime:property_crime", "articles:crime:drug_crime",
	"articles:crime:organized_crime", "articles:crime:criminal_justice", "articles:crime",
	"articles:news", "content:video", "content:image", "content:other",
}

// subscribeSharded counts, like subscribe, the messages of the documents
// under prefix, from a Redis Cluster with SSUBSCRIBE on every publisher
// channel, the way the README tells a consumer to: one subscription per
// channel, and after a receive error a reload of the slot map, so that
// go-redis subscribes again on the master that replaced a lost one.
func subscribeSharded(t *testing.T, c *redis.ClusterClient, prefix string) *subscriber {
	t.Helper()
	s := &subscriber{prefix: prefix, byKey: map[string]*delivery{}}
	// Registered first, so it runs after the subscriptions have stopped.
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, e := range s.errors {
			t.Error(e)
		}
	})
	testenv.SSubscribe(t, c, s.record, publisherChannels...)
	return s
}

// streamCopies reads the publisher's stream of every channel (the mirror
// appends each message it published, on the channel's slot) and counts the
// entries per document under prefix. During a failover it fails, and the
// client's slot map is reloaded for the next call.
func streamCopies(c *redis.ClusterClient, prefix string) (map[string]int, error) {
	out := map[string]int{}
	for _, ch := range publisherChannels {
		entries, err := c.XRange(context.Background(), "stream:{"+ch+"}", "-", "+").Result()
		if err != nil {
			c.ReloadState(context.Background())
			return nil, fmt.Errorf("xrange stream:{%s}: %w", ch, err)
		}
		for _, e := range entries {
			var body message
			if raw, ok := e.Values["message"].(string); ok && json.Unmarshal([]byte(raw), &body) == nil && strings.HasPrefix(body.Source, prefix) {
				out[docKey(body.Source, body.ID)]++
			}
		}
	}
	return out, nil
}

// TestClusterRedisMasterKilledMidDrain drains 1,500 documents through the
// real classifier and publisher, the publisher on a Redis Cluster
// (REDIS_URL=redis+cluster://..., so sharded pub/sub) with its stream
// mirror on, and SIGKILLs the master that owns articles:news mid-drain; its
// replica takes over after the cluster's node timeout. A failover is an
// outage of one shard: rows are released without spending a retry and the
// publisher's Redis breaker opens until every master answers again. It must
// hold: every document is delivered, to the sharded subscriber or (if
// published while the subscriber was re-subscribing to the new master) in
// its channel's stream; no outbox row failed or spent a retry; duplicates at
// most 1%. The figures are printed as a `cluster-redis-e2e:` line, and the
// killed node is started again (it rejoins as a replica).
func TestClusterRedisMasterKilledMidDrain(t *testing.T) {
	rc := testenv.RedisCluster(t)
	es, prefix := testenv.Elasticsearch(t)
	st := &stack{prefix: prefix, es: es, esURL: esClusterURLs(t), classifierDB: testenv.Postgres(t), publisherDB: testenv.Postgres(t)}
	st.outboxDB = testenv.WithUser(t, st.publisherDB, "classifier", "classifier")
	t.Cleanup(func() {
		// The streams keep other tests' messages too: remove only ours
		// (after the node's restart, a later cleanup, has run).
		ctx := context.Background()
		rc.ReloadState(ctx)
		for _, ch := range publisherChannels {
			entries, err := rc.XRange(ctx, "stream:{"+ch+"}", "-", "+").Result()
			if err != nil {
				continue
			}
			for _, e := range entries {
				if raw, ok := e.Values["message"].(string); ok && strings.Contains(raw, prefix) {
					_ = rc.XDel(ctx, "stream:{"+ch+"}", e.ID).Err()
				}
			}
		}
	})

	docs := healthyDocs(prefix+"_shard", 1500, 71)
	keys := keysOf(docs)
	loadDocs(t, st.es, docs)
	sub := subscribeSharded(t, rc, prefix)
	publisher := launch(t, "publisher", "publisher", st.publisherEnv(map[string]string{
		"PUBLISHER_STREAM_MIRROR": "true",
		"PUBLISHER_STREAM_MAXLEN": "100000",
		// As its own ACL user (deploy/redis/users.sh), as the native run
		// and compose give it: the role is enough on a cluster and across
		// a failover.
		"REDIS_URL": testenv.Env(t, "NC_REDIS_PUBLISHER_URL", "redis cluster"),
	}))
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+prefix, map[string]string{
		"CLASSIFIER_BATCH_SIZE":  "100",
		"CLASSIFIER_CONCURRENCY": "2",
	}))

	victim := testenv.RedisSlotMaster(t, rc, "articles:news")
	pid := testenv.RedisNodePID(t, rc, victim)
	if !sub.WaitDistinct(300, 90*time.Second) {
		t.Fatalf("only %d documents delivered within 90s; the drain never got going\npublisher:\n%s", sub.Distinct(), publisher.log.Tail(30))
	}
	_, deliveredAtKill, _, _ := sub.Stats()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL redis master %s (pid %d): %v (the cluster tests run as root)", victim, pid, err)
	}
	killed := time.Now()
	t.Cleanup(func() {
		if err := <-restartNode(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("SIGKILLed the Redis master %s (pid %d, owner of articles:news) with %d of %d delivered", victim, pid, deliveredAtKill, len(keys))

	// Delivered means received by the subscriber or, if published while it
	// was re-subscribing, in the channel's stream.
	var missing []string
	var copies map[string]int
	for deadline := testenv.GiveUpAt(t, 180*time.Second); ; {
		var err error
		if copies, err = streamCopies(rc, prefix); err != nil {
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			continue
		}
		missing = missing[:0]
		for _, k := range keys {
			if sub.Count(k) == 0 && copies[k] == 0 {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	time.Sleep(2 * time.Second) // a second copy would arrive right behind the first
	copies, err := streamCopies(rc, prefix)
	if err != nil {
		t.Fatal(err)
	}
	total, received, dups, last := sub.Stats()
	onlyInStream, streamDups := 0, 0
	var firstAfter time.Time
	for _, k := range keys {
		if sub.Count(k) == 0 && copies[k] > 0 {
			onlyInStream++
		}
		if copies[k] > 1 {
			streamDups += copies[k] - 1
		}
		sub.mu.Lock()
		if d := sub.byKey[k]; d != nil && d.at.After(killed) && d.first.Publisher.Channel == "articles:news" && (firstAfter.IsZero() || d.at.Before(firstAfter)) {
			firstAfter = d.at
		}
		sub.mu.Unlock()
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d documents neither received nor in a stream when the run's time was up, e.g. %s\npublisher:\n%s",
			len(missing), len(keys), missing[0], logLines(publisher.Output(), 15, "level=ERROR", "level=WARN"))
	}
	if max(dups, streamDups)*100 > len(keys) {
		t.Errorf("%d duplicate messages at the subscriber, %d in the streams: over 1%% of %d\n%s\npublisher:\n%s", dups, streamDups, len(keys),
			duplicateCopies(sub, keys, 5), logLines(publisher.Output(), 15, "level=ERROR", "level=WARN"))
	}
	rows, failed, retried := outboxOutcomes(t, st.publisherDB)
	if failed > 0 || retried > 0 {
		t.Errorf("outbox: %d rows failed and %d spent a retry during the failover, want none (an outage is not a failure of the rows)", failed, retried)
	}
	_, metrics := publisher.get("/metrics")
	released, _ := metricSum(metrics, "publisher_outbox_released_total")
	failedAttempts, _ := metricSum(metrics, "publisher_outbox_failed_total")
	if failedAttempts > 0 {
		t.Errorf("publisher_outbox_failed_total = %v during a failover, want 0 (rows are released, not failed)", failedAttempts)
	}
	recovered := time.Duration(0)
	if !firstAfter.IsZero() {
		recovered = firstAfter.Sub(killed)
	}
	fmt.Printf("cluster-redis-e2e: documents=%d received=%d only_in_stream=%d missing=%d messages=%d duplicates=%d stream_duplicates=%d "+
		"outbox_rows=%d failed=%d retried=%d rows_released=%v first_news_after_kill=%s last_delivery_after_kill=%s\n",
		len(keys), received, onlyInStream, len(missing), total, dups, streamDups, rows, failed, retried, released,
		recovered.Round(time.Millisecond), last.Sub(killed).Round(time.Millisecond))
	checkNoCrash(t, classifier, publisher)
}

// esClusterURLs is every node of the Elasticsearch cluster when one is
// asked for, else ELASTICSEARCH_URL.
func esClusterURLs(t *testing.T) string {
	t.Helper()
	if u := os.Getenv("NC_ES_CLUSTER_URLS"); u != "" {
		return u
	}
	return testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch")
}

// duplicateCopies describes the copies of up to n documents the subscriber
// received more than once: for each copy its channel, outbox row and the
// publisher's published_at, which tell a row published twice (two times)
// from one message delivered twice (one time).
func duplicateCopies(sub *subscriber, keys []string, n int) string {
	var b strings.Builder
	for _, k := range keys {
		msgs := sub.Messages(k)
		if len(msgs) < 2 {
			continue
		}
		fmt.Fprintf(&b, "%s:", k)
		for _, m := range msgs {
			fmt.Fprintf(&b, " [%s row %s at %s]", m.Publisher.Channel, m.Publisher.OutboxID, m.Publisher.PublishedAt)
		}
		b.WriteString("\n")
		if n--; n == 0 {
			break
		}
	}
	return b.String()
}
