package contentindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/north-cloud/infrastructure/esclient"
)

// Template names installed by EnsureTemplates.
const (
	RawTemplate        = "north-cloud-raw-content"
	ClassifiedTemplate = "north-cloud-classified-content"
)

// templatePriority beats Elasticsearch's built-in templates and leaves room
// for an operator's own overrides above it.
const templatePriority = 200

// Template is one index template: the index patterns it covers and the body
// PUT to _index_template/Name.
type Template struct {
	Name string
	Body map[string]any
}

// Templates returns the index templates of both content index kinds.
func Templates() []Template {
	return []Template{
		{Name: RawTemplate, Body: templateBody("*"+RawSuffix, RawMapping())},
		{Name: ClassifiedTemplate, Body: templateBody("*"+ClassifiedSuffix, ClassifiedMapping())},
	}
}

func templateBody(pattern string, mapping map[string]any) map[string]any {
	return map[string]any{
		"index_patterns": []string{pattern},
		"priority":       templatePriority,
		"template": map[string]any{
			"settings": settings(),
			"mappings": mapping,
		},
		"_meta": map[string]any{"managed_by": "north-cloud infrastructure/contentindex"},
	}
}

// EnsureTemplates installs (or overwrites with the same content) both index
// templates. It is idempotent and cheap, so every service calls it at
// start-up; an index created afterwards, by any writer, gets the strict
// mapping.
func EnsureTemplates(ctx context.Context, es *esclient.Client) error {
	for _, t := range Templates() {
		body, err := json.Marshal(t.Body)
		if err != nil {
			return fmt.Errorf("ensure template %s: %w", t.Name, err)
		}
		res, err := es.Indices.PutIndexTemplate(t.Name, bytes.NewReader(body), es.Indices.PutIndexTemplate.WithContext(ctx))
		if err := esclient.CheckResponse("ensure template "+t.Name, res, err); err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	return nil
}

// CreateIndex creates an index with the strict mapping of its type, and
// treats "already exists" as success. Writers that must not depend on
// templates being installed (tests, the loader) use it.
func CreateIndex(ctx context.Context, es *esclient.Client, name string) error {
	body, err := json.Marshal(map[string]any{"settings": settings(), "mappings": MappingFor(TypeOf(name))})
	if err != nil {
		return fmt.Errorf("create index %s: %w", name, err)
	}
	res, err := es.Indices.Create(name, es.Indices.Create.WithBody(bytes.NewReader(body)), es.Indices.Create.WithContext(ctx))
	if err := esclient.CheckResponse("create index "+name, res, err); err != nil {
		var re *esclient.ResponseError
		if errors.As(err, &re) && re.Status == 400 && bytes.Contains([]byte(re.Body), []byte("resource_already_exists_exception")) {
			return nil
		}
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	return res.Body.Close()
}

// Connect returns a client once the cluster answers (retrying as esclient.New
// does) and the content index templates are installed: the Elasticsearch
// step of every writer's start-up.
func Connect(ctx context.Context, cfg esclient.Config, logger *slog.Logger) (*esclient.Client, error) {
	es, err := esclient.New(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	if err := EnsureTemplates(ctx, es); err != nil {
		return nil, err
	}
	AddMissingFields(ctx, es, logger)
	return es, nil
}

// AddMissingFields adds to every existing content index the top-level
// fields of its type's mapping that it lacks: the templates shape only new
// indices, and the strict mappings refuse a document carrying a field the
// index does not know. Adding a field never changes one that exists. An
// index that refuses (it has the field with another type) is logged and
// left as it is: its own writes fail and are reported, the others are
// upgraded. It returns how many indices it upgraded.
func AddMissingFields(ctx context.Context, es *esclient.Client, logger *slog.Logger) int {
	res, err := es.Indices.GetMapping(es.Indices.GetMapping.WithContext(ctx),
		es.Indices.GetMapping.WithIndex("*"+RawSuffix, "*"+ClassifiedSuffix),
		es.Indices.GetMapping.WithAllowNoIndices(true), es.Indices.GetMapping.WithIgnoreUnavailable(true))
	if err := esclient.CheckResponse("read content index mappings", res, err); err != nil {
		logger.Warn("content index mappings not checked for missing fields", "error", err)
		return 0
	}
	defer res.Body.Close()
	var current map[string]struct {
		Mappings struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"mappings"`
	}
	if err := json.NewDecoder(res.Body).Decode(&current); err != nil {
		logger.Warn("content index mappings not checked for missing fields", "error", fmt.Errorf("decode mappings: %w", err))
		return 0
	}
	upgraded := 0
	for index, m := range current {
		want, _ := MappingFor(TypeOf(index))["properties"].(map[string]any)
		missing := map[string]any{}
		for field, def := range want {
			if _, ok := m.Mappings.Properties[field]; !ok {
				missing[field] = def
			}
		}
		if len(missing) == 0 {
			continue
		}
		body, _ := json.Marshal(map[string]any{"properties": missing})
		res, err := es.Indices.PutMapping([]string{index}, bytes.NewReader(body), es.Indices.PutMapping.WithContext(ctx))
		if err := esclient.CheckResponse("add fields to "+index, res, err); err != nil {
			logger.Warn("content index keeps its mapping", "index", index, "fields", len(missing), "error", err)
			continue
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		upgraded++
		logger.Info("content index mapping upgraded", "index", index, "fields_added", len(missing))
	}
	return upgraded
}
