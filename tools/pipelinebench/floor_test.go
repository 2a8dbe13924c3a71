package main

import (
	"testing"
	"time"
)

func TestParseFloor(t *testing.T) {
	if d, err := parseFloor("floor-cpu-ns 1234567\n"); err != nil || d != 1234567*time.Nanosecond {
		t.Fatalf("parseFloor = %v, %v", d, err)
	}
	for _, out := range []string{"", "floor-cpu-ns ", "floor-cpu-ns x", "floor-cpu-ns 0", "floor-cpu-ns -5", "cpu 12"} {
		if d, err := parseFloor(out); err == nil {
			t.Errorf("parseFloor(%q) = %v, want an error", out, d)
		}
	}
}
