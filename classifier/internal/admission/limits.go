package admission

import (
	"errors"
	"fmt"
)

// Defaults of Limits. The id and source limits are the width of the
// VARCHAR(255) columns those values are stored in (content_id and
// source_name of classification_history, dead_letter_queue and
// classified_outbox).
const (
	MaxIDCharsDefault       = 255
	MaxSourceCharsDefault   = 255
	MaxURLBytesDefault      = 8 << 10
	MaxTitleBytesDefault    = 4 << 10
	MaxOGTypeBytesDefault   = 255
	MaxDocumentBytesDefault = 8 << 20
)

// ColumnChars is the width, in characters, of the VARCHAR(255) columns that
// hold content ids, source names and index names. MaxIDChars and
// MaxSourceChars may be lowered but never raised above it.
const ColumnChars = 255

// Limits bounds what a raw document may carry. A zero field takes its
// default; a negative one is refused by Validate.
type Limits struct {
	// MaxIDChars is the longest id accepted, in characters (Unicode code
	// points, which is how Postgres counts VARCHAR(n)); at most ColumnChars.
	// Defaults to 255.
	MaxIDChars int
	// MaxSourceChars is the longest source_name accepted, in characters; at
	// most ColumnChars. Defaults to 255.
	MaxSourceChars int
	// MaxURLBytes is the longest url accepted, in bytes. Defaults to 8192
	// (8 KiB).
	MaxURLBytes int
	// MaxTitleBytes is the longest title kept, in bytes; a longer title is
	// cut at a character boundary and ends with "…". Defaults to 4096 (4 KiB).
	MaxTitleBytes int
	// MaxOGTypeBytes is the longest og_type kept, in bytes; a longer one is
	// not an Open Graph type and is dropped (treated as missing). It is an
	// Elasticsearch keyword, which refuses terms over 32766 bytes.
	// Defaults to 255.
	MaxOGTypeBytes int
	// MaxDocumentBytes bounds the text a document carries: the bytes of
	// title, raw_text, raw_html and meta_description together, after
	// normalization. A larger document is refused. Defaults to 8388608
	// (8 MiB).
	MaxDocumentBytes int
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits { return Limits{}.WithDefaults() }

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	orDefault := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	orDefault(&l.MaxIDChars, MaxIDCharsDefault)
	orDefault(&l.MaxSourceChars, MaxSourceCharsDefault)
	orDefault(&l.MaxURLBytes, MaxURLBytesDefault)
	orDefault(&l.MaxTitleBytes, MaxTitleBytesDefault)
	orDefault(&l.MaxOGTypeBytes, MaxOGTypeBytesDefault)
	orDefault(&l.MaxDocumentBytes, MaxDocumentBytesDefault)
	return l
}

// Validate reports every field of l (after defaults) that is out of range,
// naming it.
func (l Limits) Validate() error {
	l = l.WithDefaults()
	var errs []error
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{
		{"MaxIDChars", l.MaxIDChars, ColumnChars},
		{"MaxSourceChars", l.MaxSourceChars, ColumnChars},
		{"MaxURLBytes", l.MaxURLBytes, 0},
		{"MaxTitleBytes", l.MaxTitleBytes, 0},
		{"MaxOGTypeBytes", l.MaxOGTypeBytes, 0},
		{"MaxDocumentBytes", l.MaxDocumentBytes, 0},
	} {
		switch {
		case f.v < 0:
			errs = append(errs, fmt.Errorf("%s: must be positive (got %d)", f.name, f.v))
		case f.max > 0 && f.v > f.max:
			errs = append(errs, fmt.Errorf("%s: at most %d, the width of the column it is stored in (got %d)", f.name, f.max, f.v))
		}
	}
	return errors.Join(errs...)
}
