package encode

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

func TestParseSimpleFloatMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		var b []byte
		if rng.IntN(2) == 0 {
			b = append(b, '-')
		}
		intDigits := 1 + rng.IntN(9)
		for i := range intDigits {
			c := byte('0' + rng.IntN(10))
			if i == 0 && intDigits > 1 && c == '0' {
				c = '1'
			}
			b = append(b, c)
		}
		if rng.IntN(4) > 0 {
			b = append(b, '.')
			for range 1 + rng.IntN(8) {
				b = append(b, byte('0'+rng.IntN(10)))
			}
		}
		got, ok := parseSimpleFloat(b)
		want, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			t.Fatal(err)
		}
		if ok && (got != want || math.Signbit(got) != math.Signbit(want)) {
			t.Fatalf("parseSimpleFloat(%s) = %v, strconv %v", b, got, want)
		}
	}
	for _, s := range []string{"1e5", "1234567890123456", "1.2.3", "", "-", "."} {
		if _, ok := parseSimpleFloat([]byte(s)); ok {
			t.Errorf("parseSimpleFloat(%q) took the fast path", s)
		}
	}
}

func TestDecNumMatchesBigRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var d decNum
	for range 50000 {
		var b []byte
		if rng.IntN(2) == 0 {
			b = append(b, '-')
		}
		for range 1 + rng.IntN(20) {
			b = append(b, byte('0'+rng.IntN(10)))
		}
		if rng.IntN(2) == 0 {
			b = append(b, '.')
			for range 1 + rng.IntN(20) {
				b = append(b, byte('0'+rng.IntN(10)))
			}
		}
		if rng.IntN(3) == 0 {
			b = append(b, 'e')
			b = strconv.AppendInt(b, int64(rng.IntN(60)-30), 10)
		}
		scale := rng.IntN(12)
		if !d.parseDecimal(b) {
			t.Fatalf("parseDecimal(%s) failed", b)
		}
		hi, lo, nd, inexact := d.unscaled(scale)

		r, ok := new(big.Rat).SetString(string(b))
		if !ok {
			t.Fatalf("big.Rat rejects %s", b)
		}
		r.Abs(r)
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		// truncated: floor(x); callers refuse inexact values, never round
		q := new(big.Int).Quo(r.Num(), r.Denom())
		wantInexact := !r.IsInt()
		wantDigits := len(q.String())
		if q.Sign() == 0 {
			wantDigits = 0
		}
		if nd != wantDigits || inexact != wantInexact {
			t.Fatalf("%s scale %d: digits %d inexact %v, want %d %v", b, scale, nd, inexact, wantDigits, wantInexact)
		}
		if nd <= 38 {
			got := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
			got.Or(got, new(big.Int).SetUint64(lo))
			if got.Cmp(q) != 0 {
				t.Fatalf("%s scale %d: %s, want %s", b, scale, got, q)
			}
		}
	}
}

func TestTimestampParseAndFormat(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		us := rng.Int64N(253402300800000000-(-62135596800000000)) + (-62135596800000000) // years 0001..9999
		tm := time.UnixMicro(us).UTC()
		for _, layout := range []string{"2006-01-02T15:04:05.999999Z07:00", "2006-01-02 15:04:05.999999", "2006-01-02T15:04:05.999999"} {
			s := tm.Format(layout)
			got, cut, ok := parseTimestamp([]byte(s))
			if !ok || got != us || cut {
				t.Fatalf("parseTimestamp(%s) = %d %v, want %d", s, got, ok, us)
			}
		}
		off := time.FixedZone("", (rng.IntN(48)-24)*1800)
		s := tm.In(off).Format("2006-01-02T15:04:05.000000000-07:00")
		// Nine digits whose last three are 0: nothing is lost.
		if got, cut, ok := parseTimestamp([]byte(s)); !ok || got != us || cut {
			t.Fatalf("parseTimestamp(%s) = %d %v %v, want %d", s, got, cut, ok, us)
		}
		ns := tm.In(off).Format("2006-01-02T15:04:05.000000") + "001" + tm.In(off).Format("-07:00")
		if got, cut, ok := parseTimestamp([]byte(ns)); !ok || got != us || !cut {
			t.Fatalf("parseTimestamp(%s) = %d cut %v %v, want %d cut", ns, got, cut, ok, us)
		}
		days := int64(math.Floor(float64(us) / float64(usPerDay)))
		if d, ok := parseDate([]byte(tm.Format("2006-01-02"))); !ok || d != days {
			t.Fatalf("parseDate(%s) = %d", tm.Format("2006-01-02"), d)
		}
	}
}
