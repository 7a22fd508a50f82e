// Package config loads typed settings from environment variables and collects
// every problem it finds, so a misconfigured service reports all of its
// mistakes in one message instead of failing on them one restart at a time.
package config

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Loader reads variables through a lookup function and records a Problem for
// every missing or malformed value. Each getter returns the default when the
// variable is unset, empty or invalid, so callers can keep building their
// config and ask Err once at the end. A Loader is not safe for concurrent use;
// configuration is read once, at start-up, by one goroutine.
type Loader struct {
	lookup   func(string) (string, bool)
	problems []Problem
}

// New returns a Loader over the process environment, which is where every
// service reads its configuration.
func New() *Loader {
	return &Loader{lookup: os.LookupEnv}
}

// NewFromMap returns a Loader over a fixed map, so tests can exercise
// configuration without touching the process environment.
func NewFromMap(m map[string]string) *Loader {
	return &Loader{lookup: func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}}
}

// get returns the trimmed value of name and whether it was set to something
// non-empty; an empty variable counts as unset, so `FOO=` selects the default.
func (l *Loader) get(name string) (string, bool) {
	v, ok := l.lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

func (l *Loader) add(name, msg string) {
	l.problems = append(l.problems, Problem{Var: name, Msg: msg})
}

// String returns the value of name, or def when it is unset or empty.
func (l *Loader) String(name, def string) string {
	if v, ok := l.get(name); ok {
		return v
	}
	return def
}

// Required returns the value of name and records a "required" problem when it
// is unset or empty, because a service must not start without it.
func (l *Loader) Required(name string) string {
	v, ok := l.get(name)
	if !ok {
		l.add(name, "required")
	}
	return v
}

// Int returns name parsed as a base-10 int, or def when unset or invalid.
func (l *Loader) Int(name string, def int) int {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		l.add(name, fmt.Sprintf("must be an integer (got %q)", v))
		return def
	}
	return n
}

// PositiveInt is Int for sizes and counts, where zero or a negative number is
// always a mistake.
func (l *Loader) PositiveInt(name string, def int) int {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		l.add(name, fmt.Sprintf("must be a positive integer (got %q)", v))
		return def
	}
	return n
}

// Fraction returns name parsed as a number from 0 to 1, or def when unset
// or invalid.
func (l *Loader) Fraction(name string, def float64) float64 {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 || f != f {
		l.add(name, fmt.Sprintf("must be a number from 0 to 1 (got %q)", v))
		return def
	}
	return f
}

// Int64 returns name parsed as a base-10 int64, or def when unset or invalid.
func (l *Loader) Int64(name string, def int64) int64 {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		l.add(name, fmt.Sprintf("must be an integer (got %q)", v))
		return def
	}
	return n
}

// PositiveInt64 is Int64 for byte sizes and limits, where zero or a negative
// number is always a mistake.
func (l *Loader) PositiveInt64(name string, def int64) int64 {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		l.add(name, fmt.Sprintf("must be a positive integer (got %q)", v))
		return def
	}
	return n
}

// Duration returns name parsed by time.ParseDuration ("30s", "5m"). Only
// positive durations are accepted: every duration we configure is a timeout
// or an interval, and zero would mean "never wait" or a busy loop.
func (l *Loader) Duration(name string, def time.Duration) time.Duration {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		l.add(name, fmt.Sprintf("must be a positive duration such as \"30s\" (got %q)", v))
		return def
	}
	return d
}

// NonNegativeDuration is Duration for settings where zero means "none"
// (no wait): "0s" is accepted, a negative value is not.
func (l *Loader) NonNegativeDuration(name string, def time.Duration) time.Duration {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		l.add(name, fmt.Sprintf("must be a duration of zero or more such as \"0s\" or \"50ms\" (got %q)", v))
		return def
	}
	return d
}

// Bool returns name parsed by strconv.ParseBool (1, t, true, 0, f, false...).
func (l *Loader) Bool(name string, def bool) bool {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		l.add(name, fmt.Sprintf("must be true or false (got %q)", v))
		return def
	}
	return b
}

// OneOf returns name when it is one of allowed (compared exactly), so that an
// enumerated setting cannot silently fall back to something the operator did
// not ask for.
func (l *Loader) OneOf(name, def string, allowed ...string) string {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	if !slices.Contains(allowed, v) {
		l.add(name, fmt.Sprintf("must be one of %s (got %q)", strings.Join(allowed, ", "), v))
		return def
	}
	return v
}

// URL returns name when it parses as an absolute URL with one of schemes and
// a non-empty host. An unset variable yields def without a problem, so an
// empty def makes the URL optional. Problems never repeat the value, which
// may hold a password; a parseable URL is echoed with the password redacted.
func (l *Loader) URL(name, def string, schemes ...string) string {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	u, err := url.Parse(v)
	if err != nil {
		l.add(name, fmt.Sprintf("must be a URL with scheme %s", strings.Join(schemes, " or ")))
		return def
	}
	if !slices.Contains(schemes, u.Scheme) || u.Host == "" {
		l.add(name, fmt.Sprintf("must be a URL with scheme %s and a host (got %q)",
			strings.Join(schemes, " or "), u.Redacted()))
		return def
	}
	return v
}

// Check records problem for name when ok is false, for rules the typed
// getters cannot express (a minimum secret length, one setting bounded by
// another).
func (l *Loader) Check(name string, ok bool, problem string) {
	if !ok {
		l.add(name, problem)
	}
}

// Err returns nil when every variable read so far was valid, or an *Error
// listing all problems.
func (l *Loader) Err() error {
	if len(l.problems) == 0 {
		return nil
	}
	problems := slices.Clone(l.problems)
	slices.SortStableFunc(problems, func(a, b Problem) int { return strings.Compare(a.Var, b.Var) })
	return &Error{Problems: problems}
}

// Problem is one invalid variable and what is wrong with it.
type Problem struct {
	Var string
	Msg string
}

// Error reports every configuration problem at once so an operator can fix
// them all before the next start.
type Error struct {
	Problems []Problem
}

// Error formats the problems (which Err sorts by variable name), for example
// `invalid configuration: A: required; B: must be a positive integer (got "x")`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("invalid configuration: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Var)
		b.WriteString(": ")
		b.WriteString(p.Msg)
	}
	return b.String()
}
