package rawindex

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/north-cloud/infrastructure/esclient"
)

// Index is a raw index a listing found.
type Index struct {
	Name string
	// UUID is the index's index.uuid: an index deleted and created again
	// under its name has a new one. Empty when the settings did not say.
	UUID string
	// Unusable says why the pending searches cannot use the index's
	// mapping (a field they sort or filter on is not a date, or its field
	// capabilities failed); empty when they can.
	Unusable string
	// Blocked says which write block the index carries (index.blocks.write,
	// read_only, the disk flood stage): none of its documents could be
	// flipped. Empty without one.
	Blocked string
}

// dateFields must be mapped as dates (or not yet mapped) in every raw index:
// the pending searches sort on crawled_at.
var dateFields = []string{"crawled_at"}

// writeBlocks are the index settings that refuse writes.
var writeBlocks = []string{"index.blocks.write", "index.blocks.read_only", "index.blocks.read_only_allow_delete"}

type fieldCapsResponse struct {
	Indices []string `json:"indices"`
	Fields  map[string]map[string]struct {
		Type    string   `json:"type"`
		Indices []string `json:"indices"`
	} `json:"fields"`
	Failures []struct {
		Indices []string             `json:"indices"`
		Failure esclient.ErrorObject `json:"failure"`
	} `json:"failures"`
}

// List returns the open indices matching pattern (a comma-separated list of
// names, wildcards and -exclusions), sorted by name, each with its uuid, and
// whether its mapping or a write block keeps it from being polled. One
// _field_caps request lists the indices and tells each one's type of the
// date fields, and one _settings request reads their uuids and blocks, so an
// index with a bad mapping is known before it is searched.
func (s *Store) List(ctx context.Context, pattern string) ([]Index, error) {
	caps, err := s.fieldCaps(ctx, pattern)
	if err != nil {
		return nil, err
	}
	settings, err := s.settings(ctx, pattern)
	if err != nil {
		return nil, err
	}
	byName := map[string]*Index{}
	add := func(name string) *Index {
		if byName[name] == nil {
			byName[name] = &Index{Name: name}
		}
		return byName[name]
	}
	for _, name := range caps.Indices {
		add(name)
	}
	for _, field := range dateFields {
		for typ, fc := range caps.Fields[field] {
			if typ == "date" || typ == "date_nanos" || typ == "unmapped" {
				continue
			}
			on := fc.Indices
			if len(on) == 0 { // one type across every index
				on = caps.Indices
			}
			for _, name := range on {
				add(name).Unusable = fmt.Sprintf("%s is mapped as %s, not date: the poll cannot order or lease its documents; fix the index mapping (reindex)", field, typ)
			}
		}
	}
	for _, f := range caps.Failures {
		for _, name := range f.Indices {
			add(name).Unusable = "field capabilities failed: " + f.Failure.String()
		}
	}
	for name, st := range settings {
		idx, listed := byName[name]
		if !listed {
			continue // created between the two requests: the next listing has it
		}
		idx.UUID = fmt.Sprint(st["index.uuid"])
		for _, block := range writeBlocks {
			if fmt.Sprint(st[block]) == "true" {
				idx.Blocked = fmt.Sprintf("cluster_block_exception: index [%s] has %s set; its documents cannot be committed, so none is claimed", name, block)
				break
			}
		}
	}
	out := make([]Index, 0, len(byName))
	for _, idx := range byName {
		out = append(out, *idx)
	}
	slices.SortFunc(out, func(a, b Index) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, nil
}

func (s *Store) fieldCaps(ctx context.Context, pattern string) (*fieldCapsResponse, error) {
	res, err := s.es.FieldCaps(
		s.es.FieldCaps.WithContext(ctx),
		s.es.FieldCaps.WithIndex(pattern),
		s.es.FieldCaps.WithFields(dateFields...),
		s.es.FieldCaps.WithIncludeUnmapped(true),
		s.es.FieldCaps.WithIgnoreUnavailable(true),
		s.es.FieldCaps.WithAllowNoIndices(true),
		s.es.FieldCaps.WithExpandWildcards("open"),
	)
	if err := esclient.CheckResponse("list raw indices", res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed fieldCapsResponse
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("list raw indices: decode: %w", err)
	}
	return &parsed, nil
}

// settings returns the uuid and write blocks of the open indices matching
// pattern, as flat settings by index.
func (s *Store) settings(ctx context.Context, pattern string) (map[string]map[string]any, error) {
	res, err := s.es.Indices.GetSettings(
		s.es.Indices.GetSettings.WithContext(ctx),
		s.es.Indices.GetSettings.WithIndex(pattern),
		s.es.Indices.GetSettings.WithName(append([]string{"index.uuid"}, writeBlocks...)...),
		s.es.Indices.GetSettings.WithFlatSettings(true),
		s.es.Indices.GetSettings.WithIgnoreUnavailable(true),
		s.es.Indices.GetSettings.WithAllowNoIndices(true),
		s.es.Indices.GetSettings.WithExpandWildcards("open"),
	)
	if err := esclient.CheckResponse("read raw index settings", res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed map[string]struct {
		Settings map[string]any `json:"settings"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("read raw index settings: decode: %w", err)
	}
	out := make(map[string]map[string]any, len(parsed))
	for name, v := range parsed {
		out[name] = v.Settings
	}
	return out, nil
}

// Refresh refreshes indices, so their searches see every write made before;
// a missing index is ignored.
func (s *Store) Refresh(ctx context.Context, indices ...string) error {
	res, err := s.es.Indices.Refresh(s.es.Indices.Refresh.WithContext(ctx), s.es.Indices.Refresh.WithIndex(indices...),
		s.es.Indices.Refresh.WithIgnoreUnavailable(true))
	if err := esclient.CheckResponse("refresh raw indices", res, err); err != nil {
		return err
	}
	res.Body.Close()
	return nil
}
