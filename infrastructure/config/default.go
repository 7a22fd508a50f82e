package config

// Number is a setting that PositiveOr defaults: a count, a size or a
// duration.
type Number interface {
	~int | ~int32 | ~int64 | ~float64
}

// PositiveOr returns v when it is above zero and def otherwise: the default
// of a Config field for which zero and negative values both mean "not set",
// one line of a setDefaults. (cmp.Or is the default of a field for which
// only zero does.)
func PositiveOr[T Number](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
