package bench

import (
	"slices"
	"testing"
	"time"
)

// Percentile is the nearest rank below on the sorted samples, as the
// benches printed it before they shared it: p50 of n samples is the one at
// index n/2, p=1 the largest; the samples keep their order; none gives 0.
func TestPercentile(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {0.5, 3}, {0.99, 5}, {1, 5}} {
		if got := Percentile(d, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if !slices.Equal(d, []time.Duration{5, 1, 4, 2, 3}) {
		t.Errorf("the samples were reordered: %v", d)
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("Percentile of none = %v", got)
	}
	if MS(1500*time.Microsecond) != 1.5 || US(1500*time.Nanosecond) != 1.5 {
		t.Errorf("MS/US: %v %v", MS(1500*time.Microsecond), US(1500*time.Nanosecond))
	}
}
