package worker

import "testing"

// The claim limit follows the backlog: twice what the last claim found,
// within [start, most].
func TestNextLimit(t *testing.T) {
	for _, c := range []struct{ n, start, most, want int }{
		{0, 100, 1000, 100},     // ran dry: back to the start
		{1, 100, 1000, 100},     // a lone row
		{100, 100, 1000, 200},   // full: doubles
		{400, 100, 1000, 800},   // full: doubles
		{800, 100, 1000, 1000},  // capped at the most
		{1000, 100, 1000, 1000}, // stays there while batches come back full
		{300, 100, 1000, 600},   // short: near the backlog it found
		{7, 10, 10, 10},         // a small BatchSize caps the start too
	} {
		if got := nextLimit(c.n, c.start, c.most); got != c.want {
			t.Errorf("nextLimit(%d, %d, %d) = %d, want %d", c.n, c.start, c.most, got, c.want)
		}
	}
}
