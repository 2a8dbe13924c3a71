package protodec

import (
	"math/rand/v2"
	"testing"
	"time"
)

// appendDateTime's integer civil date writes what the time package writes,
// at the range's ends, around the epoch, leap days and century years, and
// at random seconds over the whole range.
func TestAppendDateTimeMatchesTime(t *testing.T) {
	secs := []int64{minTimestamp, maxTimestamp, -1, 0, 1, 86399, 86400, -86400, -86401,
		951782400, 951868800, 4107542400, 4107628800, -2203891200, 1709164800, 1788470104}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 100000 {
		secs = append(secs, minTimestamp+rng.Int64N(maxTimestamp-minTimestamp+1))
	}
	for _, s := range secs {
		want := time.Unix(s, 0).UTC().Format("2006-01-02T15:04:05")
		if got := string(appendDateTime(nil, s)); got != want {
			t.Fatalf("%d: %s, want %s", s, got, want)
		}
	}
}
