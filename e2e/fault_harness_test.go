package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// This file is the harness of the fault-injection tests (fault_test.go,
// chaos_test.go): service processes a test may kill, pause and restart, a
// Redis subscriber counting deliveries per document, raw documents written
// straight into Elasticsearch (healthy or poisoned), and readers for the
// classifier's dead-letter API, its /metrics and the raw statuses.

// ---------------------------------------------------------------- services --

// svc is a service binary a fault test controls: it can be killed
// (SIGKILL), paused (SIGSTOP/SIGCONT), terminated and started again on the
// same address. Its output, across every start, is kept for the test (and
// copied to $E2E_LOG_DIR/<test>/<label>.log when that is set).
type svc struct {
	t     testing.TB
	name  string // binary
	label string // e.g. classifier-a
	addr  string
	log   *testenv.SyncBuffer
	file  *os.File

	mu     sync.Mutex
	env    map[string]string
	cmd    *exec.Cmd
	done   chan struct{}
	exit   error
	starts int
	// expectExit is set while the test itself kills or stops the process,
	// so that watchers can tell a crash from an injected fault.
	expectExit bool
	crashes    []string
}

// launch starts a service binary with env on top of the test's environment
// and waits until /ready answers 200. At cleanup a process still running is
// resumed and terminated (SIGTERM, then SIGKILL after 30 s).
func launch(t testing.TB, name, label string, env map[string]string) *svc {
	t.Helper()
	s := newSvc(t, name, label, env)
	s.Start()
	s.WaitReady(90 * time.Second)
	return s
}

// newSvc prepares a service without starting it.
func newSvc(t testing.TB, name, label string, env map[string]string) *svc {
	t.Helper()
	s := &svc{t: t, name: name, label: label, addr: freeAddrB(t), log: &testenv.SyncBuffer{}, env: map[string]string{}}
	maps.Copy(s.env, env)
	if dir := os.Getenv("E2E_LOG_DIR"); dir != "" {
		d := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(d, 0o755); err == nil {
			if f, err := os.Create(filepath.Join(d, label+".log")); err == nil {
				s.file = f
			}
		}
	}
	t.Cleanup(func() {
		if s.Running() {
			s.mu.Lock()
			s.expectExit = true
			s.mu.Unlock()
			s.signal(syscall.SIGCONT)
			s.signal(syscall.SIGTERM)
			if !s.waitExit(30 * time.Second) {
				s.signal(syscall.SIGKILL)
				s.waitExit(10 * time.Second)
			}
		}
		if s.file != nil {
			s.file.Close()
		}
	})
	return s
}

func (s *svc) Write(p []byte) (int, error) {
	if s.file != nil {
		_, _ = s.file.Write(p)
	}
	return s.log.Write(p)
}

// Start starts the process (again) without waiting for it to be ready.
func (s *svc) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && !closed(s.done) {
		s.t.Fatalf("%s: Start while running", s.label)
	}
	s.starts++
	fmt.Fprintf(s, "=== e2e: start #%d of %s at %s\n", s.starts, s.label, time.Now().UTC().Format(time.RFC3339Nano))
	addrVar := strings.ToUpper(strings.ReplaceAll(s.name, "-", "_")) + "_HTTP_ADDR"
	cmd := exec.Command(binaryB(s.t, s.name))
	cmd.Env = append(os.Environ(), addrVar+"="+s.addr, "LOG_FORMAT=text", "LOG_LEVEL=info")
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = s, s
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", s.label, err)
	}
	done := make(chan struct{})
	s.cmd, s.done, s.exit, s.expectExit = cmd, done, nil, false
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.exit = err
		if !s.expectExit {
			s.crashes = append(s.crashes, fmt.Sprintf("%s exited on its own at %s: %v", s.label, time.Now().UTC().Format(time.RFC3339), err))
		}
		s.mu.Unlock()
		fmt.Fprintf(s, "=== e2e: %s exited: %v\n", s.label, err)
		close(done)
	}()
}

// SetEnv changes a variable for the next start.
func (s *svc) SetEnv(k, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.env[k] = v
}

// WaitReady waits until /ready answers 200, failing the test when the
// process exits, or when the run's time is up (testenv.GiveUpAt: timeout is
// what it takes on a quiet machine; a loaded one may take longer).
func (s *svc) WaitReady(timeout time.Duration) {
	s.t.Helper()
	start := time.Now()
	deadline := testenv.GiveUpAt(s.t, timeout)
	for {
		status, body := s.get("/ready")
		if status == http.StatusOK {
			return
		}
		if !s.Running() {
			s.t.Fatalf("%s exited before ready: %v\n%s", s.label, s.ExitErr(), s.log.Tail(40))
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s not ready after %s (last: %d %s)\n%s", s.label, time.Since(start).Round(time.Second), status, body, s.log.Tail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Running reports whether the process is alive (a paused one is).
func (s *svc) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil && !closed(s.done)
}

// ExitErr is the last exit's error (nil for status 0 or while running).
func (s *svc) ExitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exit
}

// Kill sends SIGKILL and waits for the process to be gone.
func (s *svc) Kill() {
	s.t.Helper()
	s.mu.Lock()
	s.expectExit = true
	s.mu.Unlock()
	fmt.Fprintf(s, "=== e2e: SIGKILL %s at %s\n", s.label, time.Now().UTC().Format(time.RFC3339Nano))
	s.signal(syscall.SIGKILL)
	if !s.waitExit(10 * time.Second) {
		s.t.Fatalf("%s did not die within 10s of SIGKILL", s.label)
	}
}

// Terminate sends SIGTERM and waits up to timeout for the exit. It returns
// whether the process exited and its exit error.
func (s *svc) Terminate(timeout time.Duration) (bool, error) {
	s.mu.Lock()
	s.expectExit = true
	s.mu.Unlock()
	fmt.Fprintf(s, "=== e2e: SIGTERM %s at %s\n", s.label, time.Now().UTC().Format(time.RFC3339Nano))
	s.signal(syscall.SIGTERM)
	if !s.waitExit(timeout) {
		return false, nil
	}
	return true, s.ExitErr()
}

// Pause stops the process with SIGSTOP (a zombie owner: alive, silent).
func (s *svc) Pause() {
	fmt.Fprintf(s, "=== e2e: SIGSTOP %s at %s\n", s.label, time.Now().UTC().Format(time.RFC3339Nano))
	s.signal(syscall.SIGSTOP)
}

// Resume continues a paused process with SIGCONT.
func (s *svc) Resume() {
	s.signal(syscall.SIGCONT)
	fmt.Fprintf(s, "=== e2e: SIGCONT %s at %s\n", s.label, time.Now().UTC().Format(time.RFC3339Nano))
}

// WhileFrozen runs fault with the process paused and resumes it however
// fault ends (a t.Fatal included), so the fault lands while the process
// holds work, whatever this machine's speed.
func (s *svc) WhileFrozen(fault func()) {
	s.Pause()
	defer s.Resume()
	fault()
}

func (s *svc) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil && !closed(s.done) {
		_ = s.cmd.Process.Signal(sig)
	}
}

// waitExit reports whether the process has exited within timeout. Same
// shape as testenv.ESNode's wait and signal, kept apart: a node also waits
// out the JVM its launcher forked and signals a process group, a svc is one
// Go binary.
func (s *svc) waitExit(timeout time.Duration) bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Crashes lists the exits the test did not cause.
func (s *svc) Crashes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.crashes...)
}

// Output is everything the process wrote, across every start.
func (s *svc) Output() string { return s.log.String() }

// panicPattern matches a Go runtime panic or fatal error in a process's
// output (a recovered and logged classification panic is not one).
var panicPattern = regexp.MustCompile(`(?m)^(panic: |fatal error: )|send on closed channel|close of closed channel|concurrent map (writes|read and map write)|DATA RACE`)

// Panics returns the lines of the output that show a crash.
func (s *svc) Panics() []string {
	var out []string
	for _, line := range strings.Split(s.Output(), "\n") {
		if panicPattern.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

// get returns the status and body of GET path, or 0 when nothing answers.
func (s *svc) get(path string) (int, string) { return httpGet(s.addr, path) }

// api calls the service's /api/v1 with a bearer token and decodes a 200
// answer into out. It returns the status (0 when nothing answers).
func (s *svc) api(t testing.TB, method, path string, out any) (int, string) {
	t.Helper()
	return s.apiSend(t, method, path, nil, out)
}

// apiSend is api with a JSON request body (none when in is nil).
func (s *svc) apiSend(t testing.TB, method, path string, in, out any) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, "http://"+s.addr+"/api/v1"+path, body)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+apiToken(t))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode: %v: %.300s", method, path, err, b)
		}
	}
	return res.StatusCode, string(b)
}

func apiToken(t testing.TB) string {
	t.Helper()
	return authtest.EnvToken(t, "e2e-fault@example.org", auth.RoleOperator)
}

func closed(ch chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// checkNoCrash fails the test for every panic line or unexpected exit of
// the services.
func checkNoCrash(t testing.TB, services ...*svc) {
	t.Helper()
	for _, s := range services {
		for _, c := range s.Crashes() {
			t.Errorf("crash: %s\n%s", c, s.log.Tail(30))
		}
		if p := s.Panics(); len(p) > 0 {
			t.Errorf("%s output shows a crash (%d lines), first: %s", s.label, len(p), p[0])
		}
	}
}

// ------------------------------------------------------------- environment --

// stack is what a fault test runs the pipeline against.
type stack struct {
	prefix       string
	es           *esclient.Client
	esURL        string
	classifierDB string
	publisherDB  string
	outboxDB     string // the classifier's INSERT-only connection to publisherDB
	rdb          *redis.Client
}

// sharedStack uses the services of scripts/services.sh (nothing in it may be
// killed): a fresh classifier and publisher database, an index prefix and
// the shared Redis.
func sharedStack(t testing.TB) *stack {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	st := &stack{prefix: prefix, es: es, esURL: testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch"),
		classifierDB: testenv.Postgres(t), publisherDB: testenv.Postgres(t), rdb: testenv.Redis(t)}
	st.outboxDB = testenv.WithUser(t, st.publisherDB, "classifier", "classifier")
	return st
}

// classifierEnv is the classifier's environment for st, fast polling,
// with extra on top.
func (st *stack) classifierEnv(id string, extra map[string]string) map[string]string {
	env := map[string]string{
		"CLASSIFIER_DATABASE_URL":        st.classifierDB,
		"CLASSIFIER_OUTBOX_DATABASE_URL": st.outboxDB,
		"ELASTICSEARCH_URL":              st.esURL,
		"CLASSIFIER_INDEX_PATTERN":       st.prefix + "*" + contentindex.RawSuffix,
		"CLASSIFIER_POLL_INTERVAL":       "200ms",
		"CLASSIFIER_DLQ_RETRY_INTERVAL":  "1s",
		"CLASSIFIER_ID":                  id,
	}
	maps.Copy(env, extra)
	return env
}

func (st *stack) publisherEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"PUBLISHER_DATABASE_URL":         st.publisherDB,
		"PUBLISHER_OUTBOX_POLL_INTERVAL": "200ms",
	}
	maps.Copy(env, extra)
	return env
}

// startDrain writes docs to st's Elasticsearch, subscribes to what is
// published under st's prefix and launches a publisher: where a fault test
// stands before it launches its classifiers. It returns docs' keys.
func (st *stack) startDrain(t testing.TB, docs []contentindex.RawDocument) (keys []string, sub *subscriber, publisher *svc) {
	t.Helper()
	loadDocs(t, st.es, docs)
	sub = subscribe(t, st.rdb, st.prefix)
	publisher = launch(t, "publisher", "publisher", st.publisherEnv(nil))
	return keysOf(docs), sub, publisher
}

// -------------------------------------------------------------- subscriber --

// delivery is what the subscriber keeps of one document's messages.
type delivery struct {
	count int
	first message
	at    time.Time // first arrival
	all   []message // every message, in arrival order
}

// subscriber counts the messages on every publisher channel per document
// (source/id) for the sources under prefix.
type subscriber struct {
	prefix string

	mu     sync.Mutex
	byKey  map[string]*delivery
	total  int
	last   time.Time
	errors []string
}

// docKey names a document across sources: ids are unique only per source.
func docKey(source, id string) string { return source + "/" + id }

// subscribe starts counting before anything is published.
func subscribe(t testing.TB, rdb *redis.Client, prefix string) *subscriber {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub := rdb.PSubscribe(ctx, "articles:*", "content:*")
	if _, err := sub.Receive(ctx); err != nil {
		cancel()
		t.Fatalf("psubscribe: %v", err)
	}
	s := &subscriber{prefix: prefix, byKey: map[string]*delivery{}}
	msgs := sub.Channel(redis.WithChannelSize(20000))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			s.record(m.Channel, m.Payload)
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = sub.Close()
		<-done
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, e := range s.errors {
			t.Error(e)
		}
	})
	return s
}

// record counts one message of a document under the subscriber's prefix;
// a message that is not JSON but names the prefix is an error the test
// reports at its end.
func (s *subscriber) record(channel, payload string) {
	var body message
	if err := json.Unmarshal([]byte(payload), &body); err != nil {
		if strings.Contains(payload, s.prefix) {
			s.mu.Lock()
			s.errors = append(s.errors, fmt.Sprintf("message on %s is not JSON: %v", channel, err))
			s.mu.Unlock()
		}
		return
	}
	if !strings.HasPrefix(body.Source, s.prefix) {
		return // another test's document
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := docKey(body.Source, body.ID)
	d := s.byKey[k]
	if d == nil {
		d = &delivery{first: body, at: now}
		s.byKey[k] = d
	}
	d.count++
	d.all = append(d.all, body)
	s.total++
	s.last = now
}

// Messages returns every message of a document, in arrival order.
func (s *subscriber) Messages(key string) []message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.byKey[key]; d != nil {
		return append([]message(nil), d.all...)
	}
	return nil
}

// Count returns how many messages arrived for a document.
func (s *subscriber) Count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.byKey[key]; d != nil {
		return d.count
	}
	return 0
}

// First returns the first message of a document.
func (s *subscriber) First(key string) (message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.byKey[key]; d != nil {
		return d.first, true
	}
	return message{}, false
}

// Distinct is the number of documents delivered at least once.
func (s *subscriber) Distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}

// Stats returns the messages received, the distinct documents, the extra
// copies and the time of the last message.
func (s *subscriber) Stats() (total, distinct, duplicates int, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total, len(s.byKey), s.total - len(s.byKey), s.last
}

// Missing returns the keys not delivered yet.
func (s *subscriber) Missing(keys []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, k := range keys {
		if s.byKey[k] == nil {
			out = append(out, k)
		}
	}
	return out
}

// LastArrival is when the last of keys first arrived (zero if one is
// missing).
func (s *subscriber) LastArrival(keys []string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last time.Time
	for _, k := range keys {
		d := s.byKey[k]
		if d == nil {
			return time.Time{}
		}
		if d.at.After(last) {
			last = d.at
		}
	}
	return last
}

// WaitAll waits until every key has arrived and returns the keys still
// missing. It waits for the event, not for a window: it gives up only when
// no key has arrived for patience (the pipeline stalled, so what is missing
// is lost) or 30 s before the test binary's -timeout. A loaded machine that
// delivers slowly but steadily fails nothing.
func (s *subscriber) WaitAll(t testing.TB, keys []string, patience time.Duration) []string {
	t.Helper()
	deadline := testenv.GiveUpAt(t, patience)
	left := -1
	stalledAt := time.Now().Add(patience)
	for {
		missing := s.Missing(keys)
		now := time.Now()
		if len(missing) != left { // progress: patience starts again
			left = len(missing)
			stalledAt = now.Add(patience)
		}
		if len(missing) == 0 {
			return nil
		}
		if now.After(stalledAt) || now.After(deadline) {
			t.Logf("gave up waiting: %d of %d keys missing, none arrived since %s (patience %s)",
				len(missing), len(keys), stalledAt.Add(-patience).Format(time.TimeOnly), patience)
			return missing
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitDistinct waits until at least n documents have arrived. Like WaitAll
// it gives up only when none has arrived for patience.
func (s *subscriber) WaitDistinct(n int, patience time.Duration) bool {
	seen := -1
	var stalledAt time.Time
	for {
		got := s.Distinct()
		if got >= n {
			return true
		}
		now := time.Now()
		if got != seen {
			seen, stalledAt = got, now.Add(patience)
		}
		if now.After(stalledAt) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---------------------------------------------------------------- documents --

var bodyLeads = []struct{ title, lead string }{
	{"Man charged with murder after downtown shooting", "Police investigate a fatal shooting downtown; a second victim was treated after an assault nearby."},
	{"Break-in wave: police link burglary to stolen vehicles", "Residents reported a burglary and the theft of two cars; police say stolen property was recovered."},
	{"Drug trafficking ring dismantled, fentanyl seized", "Officers seized fentanyl and cocaine in a drug trafficking investigation spanning three provinces."},
	{"Council approves budget as mayor looks to election", "The city council met on Tuesday and the mayor announced the budget ahead of the election."},
	{"Storm brings record snowfall", "A storm brought record snowfall to the region this week and schools closed early on Thursday."},
}

var bodyFiller = []string{
	"Officials said more details would be released later in the week.",
	"Residents in the area described the scene to reporters on Monday.",
	"The announcement follows months of discussion among community groups.",
	"Several witnesses spoke with investigators at the scene.",
	"The report was shared with the public after a lengthy review process.",
	"Local businesses said they were watching the situation closely.",
}

// healthyDoc returns a valid raw document of source with id, crawled at
// crawled.
func healthyDoc(source, id string, crawled time.Time, rng *rand.Rand) contentindex.RawDocument {
	lead := bodyLeads[rng.IntN(len(bodyLeads))]
	var b strings.Builder
	b.WriteString(lead.lead)
	for range 20 + rng.IntN(30) {
		b.WriteByte(' ')
		b.WriteString(bodyFiller[rng.IntN(len(bodyFiller))])
	}
	text := b.String()
	return contentindex.RawDocument{
		ID: id, SourceName: source, URL: "https://" + source + ".example.com/news/" + url.PathEscape(id),
		Title: lead.title, RawText: text, MetaDescription: lead.lead, OGType: "article",
		PublishedDate: crawled.Add(-time.Hour).Format(time.RFC3339), CrawledAt: crawled.UTC(),
		WordCount: len(strings.Fields(text)), ClassificationStatus: contentindex.StatusPending,
	}
}

// healthyDocs returns n valid documents of source with ids <source>-<n>,
// crawled oldest first over the last hour.
func healthyDocs(source string, n int, seed uint64) []contentindex.RawDocument {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	start := time.Now().Add(-time.Hour)
	out := make([]contentindex.RawDocument, n)
	for i := range out {
		out[i] = healthyDoc(source, fmt.Sprintf("%s-%06d", source, i), start.Add(time.Duration(i)*time.Millisecond*100), rng)
	}
	return out
}

func keysOf(docs []contentindex.RawDocument) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = docKey(d.SourceName, d.ID)
	}
	return out
}

// loadDocs writes docs into their raw indices with bulk requests of at most
// ~5 MB (a larger document goes alone), then refreshes them. The index
// templates are installed first, as every service does at start-up.
func loadDocs(t testing.TB, es *esclient.Client, docs []contentindex.RawDocument) {
	t.Helper()
	if err := tryLoadDocs(es, docs); err != nil {
		t.Fatal(err)
	}
}

func tryLoadDocs(es *esclient.Client, docs []contentindex.RawDocument) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := contentindex.EnsureTemplates(ctx, es); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	indices := map[string]bool{}
	var buf bytes.Buffer
	flush := func() error {
		if buf.Len() == 0 {
			return nil
		}
		defer buf.Reset()
		res, err := es.Bulk(bytes.NewReader(buf.Bytes()), es.Bulk.WithContext(ctx))
		if err := esclient.CheckResponse("load raw documents", res, err); err != nil {
			return err
		}
		defer res.Body.Close()
		var parsed struct {
			Errors bool `json:"errors"`
			Items  []map[string]struct {
				ID    string          `json:"_id"`
				Error json.RawMessage `json:"error"`
			} `json:"items"`
		}
		if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
			return fmt.Errorf("load: decode bulk response: %w", err)
		}
		if parsed.Errors {
			for _, item := range parsed.Items {
				for _, r := range item {
					if len(r.Error) > 0 && string(r.Error) != "null" {
						return fmt.Errorf("load %q: elasticsearch rejected it: %s", r.ID, r.Error)
					}
				}
			}
		}
		return nil
	}
	for _, d := range docs {
		index := contentindex.RawIndex(d.SourceName)
		indices[index] = true
		action, _ := json.Marshal(map[string]any{"index": map[string]any{"_index": index, "_id": d.ID}})
		body, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("load %q: %w", d.ID, err)
		}
		if buf.Len() > 0 && buf.Len()+len(body) > 5<<20 {
			if err := flush(); err != nil {
				return err
			}
		}
		buf.Write(action)
		buf.WriteByte('\n')
		buf.Write(body)
		buf.WriteByte('\n')
	}
	if err := flush(); err != nil {
		return err
	}
	names := make([]string, 0, len(indices))
	for n := range indices {
		names = append(names, n)
	}
	res, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(names...), es.Indices.Refresh.WithContext(ctx))
	if err := esclient.CheckResponse("refresh raw indices", res, err); err != nil {
		return err
	}
	res.Body.Close()
	return nil
}

// esDo runs one Elasticsearch request with a JSON body and fails the test
// on an error status.
func esDo(t testing.TB, es *esclient.Client, method, path string, body any) []byte {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, path, r)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := es.Perform(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return b
}

// rawState is a raw document's classification state.
type rawState struct {
	Index                string `json:"-"`
	ID                   string `json:"id"`
	SourceName           string `json:"source_name"`
	ClassificationStatus string `json:"classification_status"`
	ClassificationError  string `json:"classification_error"`
	ClaimedBy            string `json:"claimed_by"`
}

// settled reports a raw document classified or failed: a claim leaves it
// pending (or processing, as an older replica wrote it) until its flip.
func settled(s rawState) bool {
	return s.ClassificationStatus == contentindex.StatusClassified || s.ClassificationStatus == contentindex.StatusFailed
}

// rawStates reads the state of every raw document matching pattern (up to
// 10,000), after a refresh, keyed by docKey. Text fields are not fetched.
func rawStates(t testing.TB, es *esclient.Client, pattern string, query map[string]any) map[string]rawState {
	t.Helper()
	out, err := tryRawStates(testenv.Context(t), es, pattern, query)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tryRawStates(ctx context.Context, es *esclient.Client, pattern string, query map[string]any) (map[string]rawState, error) {
	res, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(pattern), es.Indices.Refresh.WithContext(ctx))
	if err := esclient.CheckResponse("refresh", res, err); err != nil {
		return nil, err
	}
	res.Body.Close()
	if query == nil {
		query = map[string]any{"match_all": map[string]any{}}
	}
	body, _ := json.Marshal(map[string]any{"size": 10000, "query": query,
		"_source": []string{"id", "source_name", "classification_status", "classification_error", "claimed_by"}})
	res, err = es.Search(es.Search.WithIndex(pattern), es.Search.WithBody(bytes.NewReader(body)), es.Search.WithContext(ctx))
	if err := esclient.CheckResponse("search raw states", res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed struct {
		Hits struct {
			Hits []struct {
				Index  string   `json:"_index"`
				ID     string   `json:"_id"`
				Source rawState `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, err
	}
	out := map[string]rawState{}
	for _, h := range parsed.Hits.Hits {
		s := h.Source
		s.Index = h.Index
		if s.ID == "" {
			s.ID = h.ID
		}
		out[docKey(strings.TrimSuffix(h.Index, contentindex.RawSuffix), h.ID)] = s
	}
	return out, nil
}

// queryRow runs a query of one row on the database at dsn and scans it
// into dest, failing the test with what it read on an error.
func queryRow(t testing.TB, dsn, what, query string, dest ...any) {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(query).Scan(dest...); err != nil {
		t.Fatalf("read %s: %v", what, err)
	}
}

// outboxOutcomes counts the outbox rows in the publisher's database (dsn),
// those failed and those that spent a retry.
func outboxOutcomes(t testing.TB, dsn string) (rows, failed, retried int) {
	t.Helper()
	queryRow(t, dsn, "the outbox", `SELECT COUNT(*), COUNT(*) FILTER (WHERE status = 'failed'), COUNT(*) FILTER (WHERE retry_count > 0)
		FROM classified_outbox`, &rows, &failed, &retried)
	return rows, failed, retried
}

// countClaimed counts the documents replica holds a live claim on (any
// replica when empty): claims are rows of raw_claims in the classifier's
// database (dsn), not writes to the raw documents.
func countClaimed(dsn, replica string) (int, error) {
	keys, err := claimedKeys(dsn, replica)
	return len(keys), err
}

// claimedKeys returns the docKeys of the documents replica holds a live,
// unfinished claim on (any replica when empty).
func claimedKeys(dsn, replica string) (map[string]bool, error) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT raw_index, doc_id FROM raw_claims
		WHERE NOT done AND lease_until > now() AND ($1 = '' OR claimed_by = $1)`, replica)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var idx, id string
		if err := rows.Scan(&idx, &id); err != nil {
			return nil, err
		}
		out[docKey(strings.TrimSuffix(idx, contentindex.RawSuffix), id)] = true
	}
	return out, rows.Err()
}

// waitMidBatch waits until the pipeline is busy: at least delivered
// documents of prefix have reached Redis (the workers and the committer
// are running) while replica still holds at least claims claimed
// documents. It fails the test after timeout.
func waitMidBatch(t *testing.T, sub *subscriber, dsn, replica string, delivered, claims int, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := countClaimed(dsn, replica)
		if err == nil && c >= claims && sub.Distinct() >= delivered {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("never mid-batch within %s: %d delivered (want %d) while %s held %d claims (want %d, err %v)",
				timeout, sub.Distinct(), delivered, replica, c, claims, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ------------------------------------------------------------ classifier API --

// dlqEntry is one dead-letter entry as GET /api/v1/dlq lists it.
type dlqEntry struct {
	ID           string `json:"id"`
	ContentID    string `json:"content_id"`
	SourceName   string `json:"source_name"`
	IndexName    string `json:"index_name"`
	ErrorMessage string `json:"error_message"`
	ErrorCode    string `json:"error_code"`
	RetryCount   int    `json:"retry_count"`
	MaxRetries   int    `json:"max_retries"`
	Exhausted    bool   `json:"exhausted"`
}

// dlqEntries lists every dead-letter entry whose source starts with prefix,
// following the cursor.
func dlqEntries(t *testing.T, classifier *svc, prefix string) []dlqEntry {
	t.Helper()
	var out []dlqEntry
	cursor := ""
	for range 100 {
		path := "/dlq?limit=500"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Entries    []dlqEntry `json:"entries"`
			NextCursor *string    `json:"next_cursor"`
		}
		status, body := classifier.api(t, http.MethodGet, path, &page)
		if status != http.StatusOK {
			t.Fatalf("GET /api/v1%s: %d %s", path, status, body)
		}
		for _, e := range page.Entries {
			if strings.HasPrefix(e.SourceName, prefix) || strings.HasPrefix(e.IndexName, prefix) {
				out = append(out, e)
			}
		}
		if page.NextCursor == nil || *page.NextCursor == "" {
			break
		}
		cursor = *page.NextCursor
	}
	return out
}

// findDLQ returns the entry of a document, matched by source and by a
// marker the document's id starts with (the DLQ may store a sanitized or
// shortened id for an id that is itself the problem).
func findDLQ(entries []dlqEntry, source, marker string) (dlqEntry, bool) {
	for _, e := range entries {
		if e.SourceName != source && e.IndexName != contentindex.RawIndex(source) {
			continue
		}
		if strings.Contains(e.ContentID, marker) {
			return e, true
		}
	}
	return dlqEntry{}, false
}

// metricSum adds up every sample of a metric in a Prometheus exposition
// whose labels contain all of the given label pairs (e.g. `index="x"`).
func metricSum(exposition, name string, labels ...string) (float64, bool) {
	var sum float64
	found := false
	for _, line := range strings.Split(exposition, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(line, l) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// dlqCounters reads the classifier's dead-letter and retry counters.
type dlqCounters struct {
	Enqueued, Exhausted, Processed, Retried float64
}

func readDLQCounters(t *testing.T, classifier *svc) dlqCounters {
	t.Helper()
	status, m := classifier.get("/metrics")
	if status != http.StatusOK {
		t.Fatalf("classifier /metrics: %d %.200s", status, m)
	}
	var c dlqCounters
	c.Enqueued, _ = metricSum(m, "classifier_dlq_enqueued_total")
	c.Exhausted, _ = metricSum(m, "classifier_dlq_exhausted_total")
	c.Processed, _ = metricSum(m, "classifier_dlq_processed_total")
	c.Retried, _ = metricSum(m, "classifier_documents_retried_total")
	return c
}

// checkNoRetriesSpent fails the test when the dead-letter counters moved
// between before and now, or the DLQ holds an entry of prefix that spent a
// retry or is exhausted: an unavailable dependency must cost no retry.
func checkNoRetriesSpent(t *testing.T, classifier *svc, prefix string, before dlqCounters) {
	t.Helper()
	after := readDLQCounters(t, classifier)
	if after != before {
		t.Errorf("dead-letter counters moved during the outage: before %+v, after %+v", before, after)
	}
	for _, e := range dlqEntries(t, classifier, prefix) {
		if e.RetryCount > 0 || e.Exhausted {
			t.Errorf("DLQ entry spent retries during the outage: %s %s retry_count=%d exhausted=%t: %.200s",
				e.ContentID, e.ErrorCode, e.RetryCount, e.Exhausted, e.ErrorMessage)
		}
	}
}

// logDLQSummary logs the DLQ entries of prefix by error code.
func logDLQSummary(t *testing.T, classifier *svc, prefix string) []dlqEntry {
	t.Helper()
	entries := dlqEntries(t, classifier, prefix)
	byCode := map[string]int{}
	for _, e := range entries {
		byCode[fmt.Sprintf("%s(retry=%d,exhausted=%t)", e.ErrorCode, e.RetryCount, e.Exhausted)]++
	}
	codes := make([]string, 0, len(byCode))
	for c, n := range byCode {
		codes = append(codes, fmt.Sprintf("%s=%d", c, n))
	}
	sort.Strings(codes)
	t.Logf("DLQ entries for %s*: %d %v", prefix, len(entries), codes)
	return entries
}

// logLines returns the lines of out containing any of the substrings, at
// most n, for evidence in failure messages.
func logLines(out string, n int, subs ...string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		for _, s := range subs {
			if strings.Contains(line, s) {
				keep = append(keep, line)
				break
			}
		}
		if len(keep) >= n {
			break
		}
	}
	return strings.Join(keep, "\n")
}
