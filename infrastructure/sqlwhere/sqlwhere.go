// Package sqlwhere builds the WHERE clause of a filtered query with numbered
// placeholders ($1, $2, ...): the one way the services' list, count and bulk
// queries turn an operator's filters into SQL, with every value passed as an
// argument, never spliced into the text.
package sqlwhere

import (
	"strconv"
	"strings"
)

// Builder collects conditions, joined by AND, and the arguments of their
// placeholders. The zero value is an empty clause, ready to use.
type Builder struct {
	conds []string
	args  []any
}

// Add appends cond, in which each ? stands for the next of args, numbered
// after the arguments already added: Add("(created_at, id) < (?, ?::uuid)",
// t, id). cond must hold no other question mark (no jsonb ? operator).
// A cond without ? takes no arguments ("permanent_at IS NULL").
func (b *Builder) Add(cond string, args ...any) {
	var s strings.Builder
	rest := cond
	for _, a := range args {
		before, after, ok := strings.Cut(rest, "?")
		if !ok {
			panic("sqlwhere: more arguments than placeholders in " + strconv.Quote(cond))
		}
		s.WriteString(before)
		s.WriteString(b.Arg(a))
		rest = after
	}
	if strings.Contains(rest, "?") {
		panic("sqlwhere: more placeholders than arguments in " + strconv.Quote(cond))
	}
	s.WriteString(rest)
	b.conds = append(b.conds, s.String())
}

// Arg adds v as an argument with no condition and returns its placeholder,
// for the parts of a query after the WHERE clause (LIMIT $n).
func (b *Builder) Arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// Cond returns the conditions joined by AND, or TRUE when there are none,
// for a query that writes WHERE itself.
func (b *Builder) Cond() string {
	if len(b.conds) == 0 {
		return "TRUE"
	}
	return strings.Join(b.conds, " AND ")
}

// Where returns " WHERE " and the conditions, or "" when there are none.
func (b *Builder) Where() string {
	if len(b.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(b.conds, " AND ")
}

// Args returns the arguments in the order of their placeholders.
func (b *Builder) Args() []any { return b.args }
