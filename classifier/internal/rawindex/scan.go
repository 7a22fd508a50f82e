package rawindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/esclient"
)

// Scan pages through the raw documents of many indices that have some
// statuses, each once, through an Elasticsearch point in time: the pages
// are a consistent snapshot however the documents change meanwhile, and
// each document comes with the version it had in the snapshot, so that a
// write conditional on it (Flip, Requeue) leaves alone a document that
// changed since (a classification, a crawler's rewrite).
//
// It is how the operator's bulk tools (the sweep command, a reprocess)
// read; the poller searches instead (SearchPending).

// Defaults of ScanQuery.
const (
	PageSizeDefault  = 200
	KeepAliveDefault = 5 * time.Minute
)

// ScanQuery selects the documents to page through.
type ScanQuery struct {
	// Indices is the target: names, wildcards and -exclusions, as in a
	// search. Required.
	Indices string
	// Statuses are the classification_status values read; nil reads
	// every document.
	Statuses []string
	// Fields lists the _source fields to read; nil reads them all.
	Fields []string
	// PageSize is the most documents per page. Defaults to
	// PageSizeDefault.
	PageSize int
	// KeepAlive keeps the point in time between two pages. Defaults to
	// KeepAliveDefault.
	KeepAlive time.Duration
	// Refresh refreshes the indices before the point in time is opened,
	// so the snapshot holds every write acknowledged before the scan (a
	// status flip of a previous run), not only those the periodic refresh
	// has made visible.
	Refresh bool
}

// Page handles one page of documents, each with its raw index (Index),
// _id (ID) and snapshot version. Returning false stops the scan.
type Page func(ctx context.Context, docs []*domain.RawContent) (more bool, err error)

// Scan calls page with every document of q, in pages, until they are all
// read or page returns false or an error. The point in time is closed at
// the end, even when ctx is cancelled.
func (s *Store) Scan(ctx context.Context, q ScanQuery, page Page) (err error) {
	es := s.es
	if q.Indices == "" {
		return errors.New("raw scan: Indices is required")
	}
	q.PageSize = config.PositiveOr(q.PageSize, PageSizeDefault)
	q.KeepAlive = config.PositiveOr(q.KeepAlive, KeepAliveDefault)
	keepAlive := fmt.Sprintf("%ds", int(q.KeepAlive.Seconds()))
	if q.Refresh {
		res, err := es.Indices.Refresh(es.Indices.Refresh.WithContext(ctx), es.Indices.Refresh.WithIndex(strings.Split(q.Indices, ",")...),
			es.Indices.Refresh.WithIgnoreUnavailable(true), es.Indices.Refresh.WithAllowNoIndices(true))
		if err := esclient.CheckResponse("refresh before a raw scan", res, err); err != nil {
			return fmt.Errorf("raw scan: %w", err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	pit, err := open(ctx, es, q.Indices, keepAlive)
	if err != nil || pit == "" {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if cerr := closePIT(cctx, es, pit); cerr != nil && err == nil {
			err = cerr
		}
	}()
	var after []any
	for {
		hits, id, err := scanPage(ctx, es, q.page(pit, keepAlive, after))
		if err != nil {
			return err
		}
		if id != "" {
			pit = id
		}
		if len(hits) == 0 {
			return nil
		}
		docs := make([]*domain.RawContent, len(hits))
		for i, h := range hits {
			// A scan reads the source filtered or whole; its writes are
			// partial updates either way.
			docs[i] = s.decode(ctx, hit{index: h.Index, id: h.ID, seqNo: h.SeqNo, primaryTerm: h.PrimaryTerm, source: h.Source})
		}
		more, err := page(ctx, docs)
		if err != nil || !more || len(hits) < q.PageSize {
			return err
		}
		after = hits[len(hits)-1].Sort
	}
}

// scanRequest is the body of one page's search.
type scanRequest struct {
	Size             int            `json:"size"`
	PIT              scanPIT        `json:"pit"`
	Sort             []any          `json:"sort"`
	SeqNoPrimaryTerm bool           `json:"seq_no_primary_term"`
	TrackTotalHits   bool           `json:"track_total_hits"`
	Query            map[string]any `json:"query"`
	Source           []string       `json:"_source,omitempty"`
	SearchAfter      []any          `json:"search_after,omitempty"`
}

type scanPIT struct {
	ID        string `json:"id"`
	KeepAlive string `json:"keep_alive"`
}

// page renders the search of one page after the sort values after.
func (q ScanQuery) page(pit, keepAlive string, after []any) scanRequest {
	query := map[string]any{"match_all": map[string]any{}}
	if len(q.Statuses) > 0 {
		query = map[string]any{"bool": map[string]any{"filter": []any{
			map[string]any{"terms": map[string]any{"classification_status": q.Statuses}},
		}}}
	}
	return scanRequest{Size: q.PageSize, PIT: scanPIT{ID: pit, KeepAlive: keepAlive},
		Sort: []any{map[string]any{"_shard_doc": "asc"}}, SeqNoPrimaryTerm: true, Query: query,
		Source: q.Fields, SearchAfter: after}
}

type scanHit struct {
	Index       string          `json:"_index"`
	ID          string          `json:"_id"`
	SeqNo       int64           `json:"_seq_no"`
	PrimaryTerm int64           `json:"_primary_term"`
	Source      json.RawMessage `json:"_source"`
	Sort        []any           `json:"sort"`
}

// open opens a point in time over indices; "" when no index matches.
func open(ctx context.Context, es *esclient.Client, indices, keepAlive string) (string, error) {
	res, err := es.OpenPointInTime(strings.Split(indices, ","), keepAlive, es.OpenPointInTime.WithContext(ctx),
		es.OpenPointInTime.WithIgnoreUnavailable(true), es.OpenPointInTime.WithExpandWildcards("open"))
	if err := esclient.CheckResponse("open point in time", res, err); err != nil {
		if esclient.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("raw scan: %w", err)
	}
	defer res.Body.Close()
	var out struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return "", fmt.Errorf("raw scan: open point in time: %w", err)
	}
	return out.ID, nil
}

func scanPage(ctx context.Context, es *esclient.Client, body scanRequest) ([]scanHit, string, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, "", fmt.Errorf("raw scan: %w", err)
	}
	res, err := es.Search(es.Search.WithContext(ctx), es.Search.WithBody(bytes.NewReader(b)))
	if err := esclient.CheckResponse("raw scan page", res, err); err != nil {
		return nil, "", fmt.Errorf("raw scan: %w", err)
	}
	defer res.Body.Close()
	var out struct {
		PitID string `json:"pit_id"`
		Hits  struct {
			Hits []scanHit `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return nil, "", fmt.Errorf("raw scan: decode page: %w", err)
	}
	return out.Hits.Hits, out.PitID, nil
}

func closePIT(ctx context.Context, es *esclient.Client, pit string) error {
	b, _ := json.Marshal(map[string]string{"id": pit})
	res, err := es.ClosePointInTime(es.ClosePointInTime.WithContext(ctx), es.ClosePointInTime.WithBody(bytes.NewReader(b)))
	if err := esclient.CheckResponse("close point in time", res, err); err != nil {
		if esclient.IsNotFound(err) { // already expired
			return nil
		}
		return fmt.Errorf("raw scan: %w", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	return res.Body.Close()
}
