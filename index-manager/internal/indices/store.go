// Package indices is the index-manager's access to Elasticsearch: listing,
// inspecting, searching, creating, deleting and refreshing indices. It knows
// nothing of HTTP; callers validate names first (see package api) and map
// the sentinel errors of this package to responses.
package indices

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// ContentPatterns are the index patterns the service manages and samples.
var ContentPatterns = []string{"*" + contentindex.RawSuffix, "*" + contentindex.ClassifiedSuffix}

// catColumns are the _cat/indices columns one list or stats call needs:
// everything but settings and mappings comes from this one request.
var catColumns = []string{
	"health", "status", "index", "uuid", "pri", "rep", "docs.count", "docs.deleted",
	"store.size", "creation.date", "pri.indexing.index_total", "search.query_total",
}

// Store talks to one Elasticsearch cluster.
type Store struct {
	es *esclient.Client
}

// NewStore returns a Store over es.
func NewStore(es *esclient.Client) (*Store, error) {
	if es == nil {
		return nil, errors.New("new index store: elasticsearch client is required")
	}
	return &Store{es: es}, nil
}

// catRow is one _cat/indices row; format=json gives every value as a
// string, or null for a closed index's figures.
type catRow struct {
	Health       string  `json:"health"`
	Status       string  `json:"status"`
	Index        string  `json:"index"`
	UUID         string  `json:"uuid"`
	Pri          *string `json:"pri"`
	Rep          *string `json:"rep"`
	DocsCount    *string `json:"docs.count"`
	DocsDeleted  *string `json:"docs.deleted"`
	StoreSize    *string `json:"store.size"`
	CreationDate *string `json:"creation.date"`
	IndexTotal   *string `json:"pri.indexing.index_total"`
	QueryTotal   *string `json:"search.query_total"`
}

func num(s *string) int64 {
	if s == nil {
		return 0
	}
	n, _ := strconv.ParseInt(*s, 10, 64)
	return n
}

func (r catRow) summary() Summary {
	created := time.Time{}
	if ms := num(r.CreationDate); ms > 0 {
		created = time.UnixMilli(ms).UTC()
	}
	return Summary{
		Name:         r.Index,
		Health:       r.Health,
		Status:       r.Status,
		DocCount:     num(r.DocsCount),
		StorageSize:  HumanBytes(num(r.StoreSize)),
		StorageBytes: num(r.StoreSize),
		PrimaryCount: int(num(r.Pri)),
		ReplicaCount: int(num(r.Rep)),
		CreatedAt:    created,
		IndexType:    string(contentindex.TypeOf(r.Index)),
	}
}

func (r catRow) stats() Stats {
	return Stats{
		DocCount:      num(r.DocsCount),
		DeletedDocs:   num(r.DocsDeleted),
		StorageSize:   HumanBytes(num(r.StoreSize)),
		StorageBytes:  num(r.StoreSize),
		PrimaryShards: int(num(r.Pri)),
		ReplicaShards: int(num(r.Rep)),
	}
}

func (r catRow) counters() Counters {
	return Counters{Index: r.Index, UUID: r.UUID, IndexTotal: num(r.IndexTotal), QueryTotal: num(r.QueryTotal) / max(num(r.Pri), 1)}
}

// cat runs one _cat/indices request over patterns (open and closed indices,
// not hidden ones).
func (s *Store) cat(ctx context.Context, op string, patterns ...string) ([]catRow, error) {
	req := esapi.CatIndicesRequest{
		Index:           patterns,
		Format:          "json",
		Bytes:           "b",
		H:               catColumns,
		Pri:             boolPtr(true),
		ExpandWildcards: "open,closed",
		S:               []string{"index"},
	}
	res, err := s.do(ctx, op, req)
	if err != nil {
		return nil, err
	}
	var rows []catRow
	if err := decode(op, res, &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

func boolPtr(b bool) *bool { return &b }

// List returns every index whose name starts with prefix ("" for all),
// except system indices (leading '.'), sorted by name, with one request to
// Elasticsearch whatever the number of indices. prefix must already be
// validated: it is used as a wildcard pattern.
func (s *Store) List(ctx context.Context, prefix string) ([]Summary, error) {
	rows, err := s.cat(ctx, "list indices", prefix+"*")
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(rows))
	for _, r := range rows {
		if strings.HasPrefix(r.Index, ".") {
			continue
		}
		out = append(out, r.summary())
	}
	return out, nil
}

// one returns the _cat row of exactly the index name. An alias or a
// pattern never matches: only a concrete index of that name does.
func (s *Store) one(ctx context.Context, op, name string) (catRow, error) {
	rows, err := s.cat(ctx, op, name)
	if err != nil {
		return catRow{}, err
	}
	for _, r := range rows {
		if r.Index == name {
			return r, nil
		}
	}
	return catRow{}, &Error{Op: op, Kind: ErrNotFound, Reason: "no such index [" + name + "]"}
}

// Stats returns an index's figures (rates zero) and its counters.
func (s *Store) Stats(ctx context.Context, name string) (Stats, Counters, error) {
	r, err := s.one(ctx, "index stats", name)
	if err != nil {
		return Stats{}, Counters{}, err
	}
	return r.stats(), r.counters(), nil
}

// DocCountUnknown is what DocCount reports for a closed index, whose
// documents Elasticsearch does not count.
const DocCountUnknown int64 = -1

// DocCount returns the number of documents in an index, or DocCountUnknown.
func (s *Store) DocCount(ctx context.Context, name string) (int64, error) {
	r, err := s.one(ctx, "count documents", name)
	if err != nil {
		return 0, err
	}
	if r.DocsCount == nil {
		return DocCountUnknown, nil
	}
	return num(r.DocsCount), nil
}

type indexInfo struct {
	Aliases  map[string]any `json:"aliases"`
	Mappings map[string]any `json:"mappings"`
	Settings map[string]any `json:"settings"`
}

// Detail returns settings, mappings, aliases and stats (rates zero) of an
// index, and its counters, in two requests.
func (s *Store) Detail(ctx context.Context, name string) (Detail, Counters, error) {
	const op = "get index"
	r, err := s.one(ctx, op, name)
	if err != nil {
		return Detail{}, Counters{}, err
	}
	res, err := s.do(ctx, op, esapi.IndicesGetRequest{Index: []string{name}, ExpandWildcards: "none"})
	if err != nil {
		return Detail{}, Counters{}, err
	}
	var body map[string]indexInfo
	if err := decode(op, res, &body); err != nil {
		return Detail{}, Counters{}, err
	}
	info, ok := body[name]
	if !ok {
		return Detail{}, Counters{}, &Error{Op: op, Kind: ErrNotFound, Reason: "no such index [" + name + "]"}
	}
	aliases := make([]string, 0, len(info.Aliases))
	for a := range info.Aliases {
		aliases = append(aliases, a)
	}
	d := Detail{
		Name:      name,
		Health:    r.Health,
		Status:    r.Status,
		IndexType: string(contentindex.TypeOf(name)),
		Settings:  nonNil(info.Settings),
		Mappings:  nonNil(info.Mappings),
		Stats:     r.stats(),
		Aliases:   aliases,
	}
	return d, r.counters(), nil
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Mappings returns the mappings of an index.
func (s *Store) Mappings(ctx context.Context, name string) (map[string]any, error) {
	const op = "get mappings"
	res, err := s.do(ctx, op, esapi.IndicesGetMappingRequest{Index: []string{name}, ExpandWildcards: "none"})
	if err != nil {
		return nil, err
	}
	var body map[string]struct {
		Mappings map[string]any `json:"mappings"`
	}
	if err := decode(op, res, &body); err != nil {
		return nil, err
	}
	m, ok := body[name]
	if !ok {
		return nil, &Error{Op: op, Kind: ErrNotFound, Reason: "no such index [" + name + "]"}
	}
	return nonNil(m.Mappings), nil
}

// Read bounds one read of documents.
type Read struct {
	// MaxBytes bounds the answer read from Elasticsearch (ErrTooLarge past
	// it); 0 is no bound.
	MaxBytes int64
	// Exclude lists _source fields Elasticsearch leaves out, so they are
	// never read.
	Exclude []string
}

// Document returns one document by id.
func (s *Store) Document(ctx context.Context, name, id string, r Read) (Hit, error) {
	const op = "get document"
	// esapi writes the id into the URL as is: escape it so '/', '?' or '#'
	// in an id cannot change the path or start a query string.
	res, err := s.do(ctx, op, esapi.GetRequest{Index: name, DocumentID: url.PathEscape(id), SourceExcludes: r.Exclude})
	if err != nil {
		return Hit{}, err
	}
	var body struct {
		Index  string         `json:"_index"`
		ID     string         `json:"_id"`
		Found  bool           `json:"found"`
		Source map[string]any `json:"_source"`
	}
	if err := decodeBounded(op, res, &body, r.MaxBytes, false); err != nil {
		return Hit{}, err
	}
	if !body.Found || body.Index != name {
		return Hit{}, &Error{Op: op, Kind: ErrNotFound, Reason: "no such document"}
	}
	return Hit{ID: body.ID, Score: 1, Source: nonNil(body.Source)}, nil
}

// Create creates an index with the given settings and mappings, either of
// which may be nil. An existing index gives ErrExists.
func (s *Store) Create(ctx context.Context, name string, settings, mappings map[string]any) error {
	const op = "create index"
	body := map[string]any{}
	if settings != nil {
		body["settings"] = settings
	}
	if mappings != nil {
		body["mappings"] = mappings
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return s.exec(ctx, op, esapi.IndicesCreateRequest{Index: name, Body: bytes.NewReader(b)})
}

// Delete deletes exactly one concrete index; wildcards are not expanded, so
// a pattern that slipped through validation still deletes nothing.
func (s *Store) Delete(ctx context.Context, name string) error {
	return s.exec(ctx, "delete index", esapi.IndicesDeleteRequest{
		Index:           []string{name},
		ExpandWildcards: "none",
		AllowNoIndices:  boolPtr(false),
	})
}

// Refresh makes recent writes to an index searchable.
func (s *Store) Refresh(ctx context.Context, name string) error {
	return s.exec(ctx, "refresh index", esapi.IndicesRefreshRequest{
		Index:           []string{name},
		ExpandWildcards: "none",
		AllowNoIndices:  boolPtr(false),
	})
}

// ContentCounters returns the counters of every content index in one
// request, for the rate sampler.
func (s *Store) ContentCounters(ctx context.Context) ([]Counters, error) {
	rows, err := s.cat(ctx, "sample index counters", ContentPatterns...)
	if err != nil {
		return nil, err
	}
	out := make([]Counters, 0, len(rows))
	for _, r := range rows {
		if r.Status != "open" || r.UUID == "" {
			continue
		}
		out = append(out, r.counters())
	}
	return out, nil
}

// HumanBytes formats a byte count the way Elasticsearch does ("225b",
// "4.5kb", "1.2gb").
func HumanBytes(n int64) string {
	units := []string{"b", "kb", "mb", "gb", "tb", "pb"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatInt(n, 10) + "b"
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + units[i]
}
