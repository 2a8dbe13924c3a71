package encode

import (
	"math"
	"testing"
	"time"
)

// FuzzCivil: civil agrees with the time package on every instant a
// microsecond timestamp can hold (time.UnixMicro covers all of int64).
//
//	go test -run XXX -fuzz FuzzCivil ./plugins/delta/internal/encode/
func FuzzCivil(f *testing.F) {
	for _, us := range []int64{0, -1, 1, usPerDay - 1, -usPerDay, 951782400000000 /* 2000-02-29 */, 1788470104123456,
		-62135596800000000 /* 0001-01-01 */, -62167219200000000 - 1, math.MaxInt64, math.MinInt64} {
		f.Add(us)
	}
	f.Fuzz(func(t *testing.T, us int64) {
		y, m, d, h, days := civil(us)
		tm := time.UnixMicro(us).UTC()
		if y != tm.Year() || m != int(tm.Month()) || d != tm.Day() || h != tm.Hour() {
			t.Fatalf("civil(%d) = %d-%d-%d %dh, time says %v", us, y, m, d, h, tm)
		}
		if days != daysFromCivil(y, m, d) {
			t.Fatalf("civil(%d): days %d, daysFromCivil %d", us, days, daysFromCivil(y, m, d))
		}
	})
}
