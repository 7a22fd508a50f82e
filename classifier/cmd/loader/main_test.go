package main

import "testing"

func TestParseRange(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]int{"20-200": {20, 200}, "100": {100, 100}, " 5 - 6 ": {5, 6}} {
		lo, hi, err := parseRange(in)
		if err != nil || lo != want[0] || hi != want[1] {
			t.Errorf("parseRange(%q) = %d, %d, %v; want %v", in, lo, hi, err, want)
		}
	}
	for _, in := range []string{"", "0-5", "9-3", "a-b", "-1"} {
		if _, _, err := parseRange(in); err == nil {
			t.Errorf("parseRange(%q): no error", in)
		}
	}
}
