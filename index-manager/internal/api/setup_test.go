package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/index-manager/internal/audit"
	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/index-manager/internal/openapi"
	"github.com/north-cloud/index-manager/internal/rates"
	"github.com/north-cloud/index-manager/internal/sessions"
	"github.com/north-cloud/index-manager/migrations"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/httpserver"
	infraopenapi "github.com/north-cloud/infrastructure/openapi"
	"github.com/north-cloud/infrastructure/postgres/postgrestest"
	"github.com/north-cloud/infrastructure/testenv"
)

const (
	adminUser     = "operator"
	adminPassword = "correct horse battery staple"
	// maxBody is the body limit of the test server, small so oversized
	// bodies are cheap to send.
	maxBody = 64 << 10
)

// recorder is an http.RoundTripper on the Elasticsearch client that counts
// requests and keeps the bodies of searches, so tests can see what the API
// sent (one request per list, a timeout on every query).
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	n    int
	reqs []string
	// hold, when set, keeps each search (a path ending in /_search) until
	// it is closed; held gets a value as each one arrives.
	hold chan struct{}
	held chan struct{}
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.mu.Lock()
	r.n++
	r.reqs = append(r.reqs, req.Method+" "+req.URL.RequestURI()+" "+string(body))
	hold, held := r.hold, r.held
	r.mu.Unlock()
	if hold != nil && strings.HasSuffix(req.URL.Path, "/_search") {
		held <- struct{}{}
		<-hold
	}
	return r.base.RoundTrip(req)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n, r.reqs = 0, nil
}

func (r *recorder) snapshot() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, append([]string(nil), r.reqs...)
}

type bundle struct {
	t       testing.TB
	router  *gin.Engine
	es      *esclient.Client // unrecorded client for test setup
	rec     *recorder
	prefix  string
	db      *sql.DB
	dsn     string
	authn   *auth.Authenticator
	secret  string
	token   string
	samples *rates.Repository
	store   *indices.Store
	doc     *infraopenapi.Document
}

type options struct {
	esURL     string // overrides the real cluster (for "down" tests)
	noAccount bool
	// accounts are more logins with their roles (INDEX_MANAGER_ACCOUNTS_FILE).
	accounts []api.RoleAccount
	closedDB bool
	// protected index names; "{prefix}" is replaced by the test's index
	// prefix.
	protected []string
	// trusted proxies of the login limits; clock read by them (nil: the
	// system clock).
	trusted []netip.Prefix
	clock   *clock.Manual
	// bodies is VIEWER_MESSAGE_BODIES (empty: shown).
	bodies api.MessageBodies
	// reads bound the document reads (zero: the defaults).
	reads api.ReadLimits
	// tokenTTL is the access tokens' lifetime (zero: the default).
	tokenTTL time.Duration
}

func randomSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func setup(t testing.TB, o options) *bundle {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	db, dsn := postgrestest.Migrated(t, migrations.FS)

	url := o.esURL
	if url == "" {
		url = testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch")
	}
	rec := &recorder{base: http.DefaultTransport}
	apiES, err := esclient.NewLazy(esclient.Config{URL: url, Transport: rec, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	store, err := indices.NewStore(apiES)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := rates.NewRepository(db, rates.WindowDefault)
	if err != nil {
		t.Fatal(err)
	}
	secret := randomSecret()
	authn, err := auth.New(auth.Config{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, es: es, rec: rec, prefix: prefix, db: db, dsn: dsn, authn: authn, secret: secret, samples: samples, store: store}
	b.router = b.mount(o)
	token, _, err := authn.Issue(adminUser, auth.RoleAdmin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	b.token, b.doc = token, doc
	return b
}

// mount mounts the API with the options o over b's Elasticsearch store,
// database and authenticator, and returns its router: setup's, or a
// service restarted with other settings over the same state (remount).
func (b *bundle) mount(o options) *gin.Engine {
	t, db := b.t, b.db
	log := testenv.Logger(t)
	auditDB := db
	if o.closedDB {
		closed, err := sql.Open("postgres", b.dsn)
		if err != nil {
			t.Fatal(err)
		}
		_ = closed.Close()
		auditDB = closed
	}
	auditLog, err := audit.NewRepository(auditDB)
	if err != nil {
		t.Fatal(err)
	}
	var account api.Account
	if !o.noAccount {
		hash, err := bcrypt.GenerateFromPassword([]byte(adminPassword), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		account = api.Account{User: adminUser, PasswordHash: string(hash)}
	}
	srv, err := httpserver.New(httpserver.Config{Addr: ":0", ServiceName: "index-manager", MaxBodyBytes: maxBody}, log, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	protected := make([]string, len(o.protected))
	for i, p := range o.protected {
		protected[i] = strings.ReplaceAll(p, "{prefix}", b.prefix)
	}
	var clk clock.Clock
	if o.clock != nil {
		clk = o.clock.Clock()
	}
	sess, err := sessions.NewRepository(db)
	if err != nil {
		t.Fatal(err)
	}
	err = api.Mount(srv.Router(), api.Config{
		Indices: b.store, Audit: auditLog, Rates: b.samples, Auth: b.authn, Account: account, Accounts: o.accounts, Sessions: sess,
		TokenTTL:  o.tokenTTL,
		CursorKey: []byte(randomSecret()), ProtectedIndices: protected, Logger: log,
		TrustedProxies: o.trusted, Clock: clk, MessageBodies: o.bodies, Reads: o.reads,
	})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	return srv.Router()
}

// remount is b's service restarted with the options o over the same
// indices, database and signing key.
func (b *bundle) remount(o options) *bundle {
	nb := *b
	nb.router = b.mount(o)
	return &nb
}

// response is a recorded answer.
type response struct {
	Status int
	Body   []byte
	Header http.Header
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// errorCode returns error.code of an error body, which must have a message.
func (r response) errorCode(t testing.TB) string {
	t.Helper()
	code, message := r.errorOf(t)
	if message == "" {
		t.Fatalf("error without a message: %s", r.Body)
	}
	return code
}

// errorOf returns error.code and error.message of an error body.
func (r response) errorOf(t testing.TB) (string, string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	r.decode(t, &e)
	return e.Error.Code, e.Error.Message
}

// request describes one call; Body is JSON-encoded unless it is a string
// or []byte.
type request struct {
	Method string
	Path   string
	Body   any
	Token  *string // nil: the bundle's token; "" : none
	Header map[string]string
	// Chunked sends the body without a Content-Length.
	Chunked bool
	// Remote is the client address (host:port); httptest's default
	// otherwise.
	Remote string
}

// do serves one request through the real router and validates the answer
// against the OpenAPI document (status documented, body matches schema)
// whenever the path is one of the API's routes.
func (b *bundle) do(r request) response {
	t := b.t
	t.Helper()
	var body []byte
	switch v := r.Body.(type) {
	case nil:
	case string:
		body = []byte(v)
	case []byte:
		body = v
	default:
		var err error
		if body, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	req := httptest.NewRequest(r.Method, "http://localhost"+r.Path, bytes.NewReader(body))
	if r.Chunked {
		req.ContentLength = -1
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	token := b.token
	if r.Token != nil {
		token = *r.Token
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	if r.Remote != "" {
		req.RemoteAddr = r.Remote
	}
	w := httptest.NewRecorder()
	b.router.ServeHTTP(w, req)
	res := response{Status: w.Code, Body: w.Body.Bytes(), Header: w.Header()}
	b.validate(req, res)
	return res
}

// validate checks the answer against the served OpenAPI document: a
// documented status with a matching body, or the JSON error shape for a
// request of no documented route (a path trick that matched nothing).
func (b *bundle) validate(req *http.Request, res response) {
	b.t.Helper()
	if err := b.doc.CheckResponse(req, res.Status, res.Header, res.Body); err != nil {
		b.t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// createIndex creates an index directly in Elasticsearch, with the
// project's mapping for content names.
func (b *bundle) createIndex(name string) {
	b.t.Helper()
	if contentindex.TypeOf(name) == contentindex.TypeOther {
		// contentindex.CreateIndex sends "mappings": null for other names.
		res, err := b.es.Indices.Create(name)
		if err := esclient.CheckResponse("create "+name, res, err); err != nil {
			b.t.Fatal(err)
		}
		res.Body.Close()
		return
	}
	if err := contentindex.CreateIndex(context.Background(), b.es, name); err != nil {
		b.t.Fatalf("create %s: %v", name, err)
	}
}

// indexDocs bulk-indexes n raw documents with ids doc-0..doc-(n-1) and
// refreshes.
func (b *bundle) indexDocs(name string, n int) {
	b.t.Helper()
	const chunk = 5000
	for start := 0; start < n; start += chunk {
		var buf bytes.Buffer
		for i := start; i < min(start+chunk, n); i++ {
			id := fmt.Sprintf("doc-%d", i)
			fmt.Fprintf(&buf, `{"index":{"_index":%q,"_id":%q}}`+"\n", name, id)
			doc := map[string]any{"id": id, "title": fmt.Sprintf("title %d about crime and news", i), "word_count": i,
				"classification_status": "pending", "source_name": "test", "crawled_at": "2026-11-25T10:00:00Z"}
			line, _ := json.Marshal(doc)
			buf.Write(line)
			buf.WriteByte('\n')
		}
		res, err := b.es.Bulk(bytes.NewReader(buf.Bytes()), b.es.Bulk.WithRefresh("true"))
		if err := esclient.CheckResponse("bulk", res, err); err != nil {
			b.t.Fatal(err)
		}
		var out struct {
			Errors bool `json:"errors"`
		}
		_ = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if out.Errors {
			b.t.Fatalf("bulk into %s had errors", name)
		}
	}
}

// exists reports whether an index exists, asking Elasticsearch directly.
func (b *bundle) exists(name string) bool {
	b.t.Helper()
	res, err := b.es.Indices.Exists([]string{name})
	if err != nil {
		b.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// auditEntries reads the index operations of the audit log (the entries
// with an action: create, delete, refresh) directly from the database; the
// shared log also records every other request to a mutating route, refused
// ones included, without an action.
func (b *bundle) auditEntries(index string) []audit.Entry {
	b.t.Helper()
	repo, err := audit.NewRepository(b.db)
	if err != nil {
		b.t.Fatal(err)
	}
	es, err := repo.List(context.Background(), audit.Filter{Target: index, Limit: audit.ListLimitMax})
	if err != nil {
		b.t.Fatal(err)
	}
	return slices.DeleteFunc(es, func(e audit.Entry) bool { return e.Action == "" })
}
