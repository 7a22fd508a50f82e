package contentindex

// AutoExpandReplicas is the replica rule of every content index: as many
// replicas as there are data nodes besides the primary's, up to one
// (number_of_replicas = min(1, data nodes - 1)). Elasticsearch applies it
// itself as nodes join and leave, so a single node stays green with no
// replica, and on a cluster every shard has a copy on a second node: a
// write acknowledged before a node dies is on the surviving copy, which is
// promoted to primary.
const AutoExpandReplicas = "0-1"

// Shared settings: one primary shard (content indices are per source and
// small) and replicas by AutoExpandReplicas. Only core analyzers are used:
// the minimal Elasticsearch distribution has no analysis-common module.
func settings() map[string]any {
	return map[string]any{
		"number_of_shards":     1,
		"auto_expand_replicas": AutoExpandReplicas,
		"refresh_interval":     "1s",
	}
}

func textWithKeyword() map[string]any {
	return map[string]any{
		"type":     "text",
		"analyzer": "standard",
		"fields": map[string]any{
			"keyword": map[string]any{"type": "keyword", "ignore_above": 512},
		},
	}
}

func rawProperties() map[string]any {
	return map[string]any{
		"id":               map[string]any{"type": "keyword"},
		"url":              map[string]any{"type": "keyword", "ignore_above": 2048},
		"source_name":      map[string]any{"type": "keyword"},
		"title":            textWithKeyword(),
		"raw_text":         map[string]any{"type": "text", "analyzer": "standard"},
		"raw_html":         map[string]any{"type": "text", "index": false},
		"og_type":          map[string]any{"type": "keyword"},
		"meta_description": map[string]any{"type": "text", "analyzer": "standard"},
		// Crawlers send dates the classifier has to cope with: keep the
		// document, skip indexing the malformed value.
		"published_date":        map[string]any{"type": "date", "ignore_malformed": true},
		"crawled_at":            map[string]any{"type": "date"},
		"word_count":            map[string]any{"type": "integer", "ignore_malformed": true},
		"classification_status": map[string]any{"type": "keyword"},
		"claimed_by":            map[string]any{"type": "keyword"},
		"claimed_at":            map[string]any{"type": "date"},
		"classification_error":  map[string]any{"type": "keyword", "ignore_above": 1024},
		"priority":              map[string]any{"type": "keyword"},
		"pending_since":         map[string]any{"type": "date"},
		"reprocess_task":        map[string]any{"type": "keyword"},
	}
}

// RawMapping is the strict mapping of {source}_raw_content.
func RawMapping() map[string]any {
	return map[string]any{"dynamic": "strict", "properties": rawProperties()}
}

// ClassifiedMapping is the strict mapping of {source}_classified_content:
// the raw fields plus the classification.
func ClassifiedMapping() map[string]any {
	props := rawProperties()
	delete(props, "claimed_by")
	delete(props, "claimed_at")
	delete(props, "classification_error")
	delete(props, "priority")
	delete(props, "pending_since")
	delete(props, "reprocess_task")
	for k, v := range map[string]any{
		"content_type":            map[string]any{"type": "keyword"},
		"content_type_confidence": map[string]any{"type": "float"},
		"content_type_method":     map[string]any{"type": "keyword"},
		"quality_score":           map[string]any{"type": "integer"},
		"quality_factors": map[string]any{
			"properties": map[string]any{
				"word_count":  map[string]any{"type": "float"},
				"metadata":    map[string]any{"type": "float"},
				"richness":    map[string]any{"type": "float"},
				"readability": map[string]any{"type": "float"},
			},
		},
		"topics": map[string]any{"type": "keyword"},
		"topic_scores": map[string]any{
			"properties": map[string]any{
				"topic": map[string]any{"type": "keyword"},
				"score": map[string]any{"type": "float"},
			},
		},
		// The decision's primary section and its probability (additions
		// beside the spec's topics and topic_scores).
		"primary_topic":            map[string]any{"type": "keyword"},
		"primary_topic_confidence": map[string]any{"type": "float"},
		"topic_disputed":           map[string]any{"type": "boolean"},
		"is_crime_related":         map[string]any{"type": "boolean"},
		"crime_subcategory":        map[string]any{"type": "keyword"},
		"source_reputation":        map[string]any{"type": "float"},
		"confidence":               map[string]any{"type": "float"},
		"classifier_version":       map[string]any{"type": "keyword"},
		"classified_at":            map[string]any{"type": "date"},
		// Queue hygiene: the canonical URL, the text's exact fingerprint,
		// the original of a duplicate and the published version.
		"canonical_url": map[string]any{"type": "keyword", "ignore_above": 2048},
		"content_hash":  map[string]any{"type": "keyword"},
		"duplicate_of": map[string]any{
			"properties": map[string]any{
				"index": map[string]any{"type": "keyword"},
				"id":    map[string]any{"type": "keyword"},
				"kind":  map[string]any{"type": "keyword"},
			},
		},
		"version": map[string]any{"type": "integer"},
		// Queue hygiene (seed 004): how the URL's class had it processed.
		"processing_strategy": map[string]any{"type": "keyword"},
		"is_processable":      map[string]any{"type": "boolean"},
		"url_class":           map[string]any{"type": "keyword"},
	} {
		props[k] = v
	}
	return map[string]any{"dynamic": "strict", "properties": props}
}

// MappingFor returns the strict mapping for an index type, or nil for
// TypeOther.
func MappingFor(t Type) map[string]any {
	switch t {
	case TypeRaw:
		return RawMapping()
	case TypeClassified:
		return ClassifiedMapping()
	default:
		return nil
	}
}

// Settings returns the default index settings of content indices.
func Settings() map[string]any { return settings() }
