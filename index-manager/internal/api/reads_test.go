package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/auth"
)

// Reads of documents are bounded per caller and in all: with two of one
// caller's queries held inside Elasticsearch, the caller's third is
// refused at once with 429 and Retry-After while another caller's read
// runs; with the service's slots full, every caller's list, document and
// query is refused, but a count (size 0) still runs; once the held reads
// finish, all of them have answered 200.
func TestReadsBoundedPerCallerAndInAll(t *testing.T) {
	t.Parallel()
	b := setup(t, options{reads: api.ReadLimits{PerCaller: 2, Total: 3}})
	name := b.prefix + "_slots_raw_content"
	b.createIndex(name)
	b.indexDocs(name, 5)
	tokenOf := func(user string) *string {
		tok, _, err := b.authn.Issue(user, auth.RoleViewer, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return &tok
	}
	alice, bob, carol := tokenOf("alice"), tokenOf("bob"), tokenOf("carol")
	query := func(tok *string) response {
		return b.do(request{Method: "POST", Path: "/api/v1/indices/" + name + "/_query", Body: `{"size":1}`, Token: tok})
	}

	b.rec.mu.Lock()
	b.rec.hold, b.rec.held = make(chan struct{}), make(chan struct{}, 10)
	b.rec.mu.Unlock()
	var wg sync.WaitGroup
	answers := make(chan int, 10)
	for _, tok := range []*string{alice, alice, bob} {
		wg.Go(func() { answers <- query(tok).Status })
		<-b.rec.held // inside Elasticsearch, holding its slots
	}

	// refused runs a read that must be refused before Elasticsearch: one
	// that reaches it instead fails the test and is answered after the
	// held ones are let go.
	refused := func(what string, run func() response, want string) {
		t.Helper()
		got := make(chan response, 1)
		wg.Go(func() { got <- run() })
		select {
		case r := <-got:
			if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), want) {
				t.Errorf("%s: %d %s (Retry-After %q), want 429 saying %q", what, r.Status, r.Body, r.Header.Get("Retry-After"), want)
			}
		case <-b.rec.held:
			t.Errorf("%s reached Elasticsearch, want 429 saying %q", what, want)
			answers <- http.StatusOK // counted with the held ones
		}
	}
	refused("alice's third read", func() response { return query(alice) }, "per caller")
	refused("carol's read with the service's slots full", func() response { return query(carol) }, "at most 3 document reads at once")
	refused("carol's document list with the slots full", func() response {
		return b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/documents", Token: carol})
	}, "at most 3 document reads at once")
	refused("carol's document with the slots full", func() response {
		return b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/documents/doc-1", Token: carol})
	}, "at most 3 document reads at once")
	// A count returns no documents and takes no slot.
	countDone := make(chan response, 1)
	go func() {
		countDone <- b.do(request{Method: "POST", Path: "/api/v1/indices/" + name + "/_query", Body: `{"size":0}`, Token: alice})
	}()
	select {
	case r := <-countDone:
		t.Errorf("alice's count answered %d before Elasticsearch saw it", r.Status)
	case <-b.rec.held:
		wg.Go(func() { answers <- (<-countDone).Status }) // after the release below
	}

	b.rec.mu.Lock()
	close(b.rec.hold)
	b.rec.hold = nil
	b.rec.mu.Unlock()
	wg.Wait()
	close(answers)
	for s := range answers {
		if s != http.StatusOK {
			t.Errorf("a held read answered %d, want 200", s)
		}
	}
	// The slots are free again.
	for _, tok := range []*string{alice, alice, carol} {
		if r := query(tok); r.Status != http.StatusOK {
			t.Errorf("a read after the held ones: %d %s", r.Status, r.Body)
		}
	}
}

// An answer past INDEX_MANAGER_MAX_RESULT_BYTES is refused with a 400 that
// says how to narrow the read, without decoding it; a narrower read of the
// same index passes.
func TestReadTooLargeIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, options{reads: api.ReadLimits{MaxResultBytes: 4096}})
	name := b.prefix + "_large_raw_content"
	b.createIndex(name)
	b.indexDocs(name, 60)
	for what, req := range map[string]request{
		"query":     {Method: "POST", Path: "/api/v1/indices/" + name + "/_query", Body: `{"size":60}`},
		"documents": {Method: "GET", Path: "/api/v1/indices/" + name + "/documents?size=60"},
	} {
		r := b.do(req)
		if code, msg := r.errorOf(t); r.Status != http.StatusBadRequest || code != "result_too_large" || !strings.Contains(msg, "4096 bytes") {
			t.Errorf("%s of 60 documents over 4096 bytes: %d %s", what, r.Status, r.Body)
		}
	}
	r := b.do(request{Method: "POST", Path: "/api/v1/indices/" + name + "/_query", Body: `{"size":2}`})
	if r.Status != http.StatusOK {
		t.Errorf("query of 2 documents: %d %s", r.Status, r.Body)
	}
	r = b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/documents/doc-1"})
	if r.Status != http.StatusOK {
		t.Errorf("one document: %d %s", r.Status, r.Body)
	}
}

// With bodies hidden from viewers, a viewer's reads ask Elasticsearch to
// leave the body fields out, so they are never read into the service; an
// operator's reads still carry them.
func TestHiddenBodiesAreNotFetched(t *testing.T) {
	t.Parallel()
	b := setup(t, options{bodies: api.BodiesHidden})
	name := b.prefix + "_nofetch_raw_content"
	b.createIndex(name)
	b.indexDocs(name, 3)
	viewer, _, err := b.authn.Issue("vera", auth.RoleViewer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	excludes := `"excludes":["raw_text","raw_html","body"]`
	for _, tc := range []struct {
		who     string
		token   *string
		exclude bool
	}{{"viewer", &viewer, true}, {"operator", nil, false}} {
		for _, req := range []request{
			{Method: "POST", Path: "/api/v1/indices/" + name + "/_query", Body: `{"size":3,"_source":["id","title"]}`, Token: tc.token},
			{Method: "GET", Path: "/api/v1/indices/" + name + "/documents", Token: tc.token},
			{Method: "GET", Path: "/api/v1/indices/" + name + "/documents/doc-1", Token: tc.token},
		} {
			b.rec.reset()
			if r := b.do(req); r.Status != http.StatusOK {
				t.Fatalf("%s %s %s: %d %s", tc.who, req.Method, req.Path, r.Status, r.Body)
			}
			_, sent := b.rec.snapshot()
			all := strings.Join(sent, "\n")
			excluded := strings.Contains(all, excludes) || strings.Contains(all, "_source_excludes=raw_text%2Craw_html%2Cbody")
			if excluded != tc.exclude {
				t.Errorf("%s %s %s: bodies excluded at Elasticsearch %v, want %v; sent %s", tc.who, req.Method, req.Path, excluded, tc.exclude, all)
			}
		}
	}
}

// query_string's costly forms (a regular expression, a term that starts
// with a wildcard, allow_leading_wildcard true) are refused with 400 before
// Elasticsearch sees them; its cheap ones pass, and every query_string is
// sent with allow_leading_wildcard false.
func TestQueryStringCostlyFormsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "_qs_raw_content"
	b.createIndex(name)
	b.indexDocs(name, 5)
	path := "/api/v1/indices/" + name + "/_query"
	qs := func(text string, extra string) string {
		return fmt.Sprintf(`{"query":{"query_string":{"query":%q%s}}}`, text, extra)
	}
	for text, extra := range map[string]string{
		`title:/cr.*e/`:        "",
		`/.*/`:                 "",
		`*rime`:                "",
		`title:?rime`:          "",
		`news AND (*ime)`:      "",
		`crime`:                `,"allow_leading_wildcard":true`,
		`news OR title:**ime`:  "",
		`"quoted" /[a-z]+ing/`: "",
	} {
		b.rec.reset()
		r := b.do(request{Method: "POST", Path: path, Body: qs(text, extra)})
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s%s: %d %s, want 400", text, extra, r.Status, r.Body)
		}
		if n, _ := b.rec.snapshot(); n != 0 {
			t.Errorf("%s%s reached Elasticsearch", text, extra)
		}
	}
	for _, text := range []string{`crim*`, `*:*`, `title:*`, `"a/b" crime`, `a\/b OR crime`, `word_count:[* TO 3]`, `cri?e`} {
		b.rec.reset()
		r := b.do(request{Method: "POST", Path: path, Body: qs(text, `,"allow_leading_wildcard":false`)})
		if r.Status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", text, r.Status, r.Body)
			continue
		}
		if _, sent := b.rec.snapshot(); len(sent) != 1 || !strings.Contains(sent[0], `"allow_leading_wildcard":false`) {
			t.Errorf("%s was sent without allow_leading_wildcard false: %v", text, sent)
		}
	}
	// Without the option the service adds it.
	b.rec.reset()
	if r := b.do(request{Method: "POST", Path: path, Body: qs("crime", "")}); r.Status != http.StatusOK {
		t.Fatalf("plain query_string: %d %s", r.Status, r.Body)
	}
	if _, sent := b.rec.snapshot(); len(sent) != 1 || !strings.Contains(sent[0], `"allow_leading_wildcard":false`) {
		t.Errorf("query_string sent without allow_leading_wildcard false: %v", sent)
	}
}
