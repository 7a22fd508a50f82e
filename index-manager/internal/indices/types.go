package indices

import "time"

// Summary is one row of the index list (IndexSummary in the dashboard's types).
type Summary struct {
	Name         string    `json:"name"`
	Health       string    `json:"health"`
	Status       string    `json:"status"`
	DocCount     int64     `json:"doc_count"`
	StorageSize  string    `json:"storage_size"`
	StorageBytes int64     `json:"storage_bytes"`
	PrimaryCount int       `json:"primary_count"`
	ReplicaCount int       `json:"replica_count"`
	CreatedAt    time.Time `json:"created_at"`
	IndexType    string    `json:"index_type"`
}

// Stats are an index's figures (IndexStats in the dashboard). The rates are filled
// in from stored samples by the caller; Elasticsearch only has counters.
type Stats struct {
	DocCount      int64   `json:"doc_count"`
	DeletedDocs   int64   `json:"deleted_docs"`
	StorageSize   string  `json:"storage_size"`
	StorageBytes  int64   `json:"storage_bytes"`
	PrimaryShards int     `json:"primary_shards"`
	ReplicaShards int     `json:"replica_shards"`
	IndexingRate  float64 `json:"indexing_rate"`
	SearchRate    float64 `json:"search_rate"`
}

// Counters are the cumulative operation counts of one index, the raw
// material of the rates. UUID changes when an index is deleted and created
// again, which restarts the counters.
type Counters struct {
	Index      string
	UUID       string
	IndexTotal int64
	QueryTotal int64
}

// Detail is everything about one index (GET /api/v1/indices/{name}).
type Detail struct {
	Name      string         `json:"name"`
	Health    string         `json:"health"`
	Status    string         `json:"status"`
	IndexType string         `json:"index_type"`
	Settings  map[string]any `json:"settings"`
	Mappings  map[string]any `json:"mappings"`
	Stats     Stats          `json:"stats"`
	Aliases   []string       `json:"aliases"`
}

// Hit is one document (DocumentHit in the dashboard).
type Hit struct {
	ID        string              `json:"_id"`
	Score     float64             `json:"_score"`
	Source    map[string]any      `json:"_source"`
	Highlight map[string][]string `json:"highlight,omitempty"`
	// Sort holds the hit's sort values, the search_after key of the next page.
	Sort []any `json:"sort,omitempty"`
}

// SearchResult is a page of hits (DocumentQueryResponse in the dashboard, plus the
// cursor of the next page for the documents endpoint).
type SearchResult struct {
	Total      int64   `json:"total"`
	MaxScore   float64 `json:"max_score"`
	Hits       []Hit   `json:"hits"`
	Took       int     `json:"took_ms"`
	NextCursor string  `json:"next_cursor,omitempty"`
	// Aggregations are Elasticsearch's results of the request's aggs.
	Aggregations map[string]any `json:"aggregations,omitempty"`
}
