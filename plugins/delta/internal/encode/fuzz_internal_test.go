package encode

import (
	"bytes"
	"math/big"
	"strings"
	"testing"
	"time"
)

// FuzzDecimal checks decNum against math/big for any text and scale: a
// text parseDecimal takes is a number big.Rat reads the same; unscaled
// returns floor(|x| × 10^scale), its digit count, and inexact exactly when
// that drops a nonzero digit (the decoder refuses those: never rounded).
//
//	go test -run XXX -fuzz FuzzDecimal ./plugins/delta/internal/encode/
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"1.2345", "1.2340", "1.2345e1", "-0.005", "+.5", "999.995", "0", "-0.000",
		"12345e-3", "1e-40", "99999999999999999999999999999999999999", "0.30000000000000004", "1.", ".1e+2"} {
		f.Add(s, uint8(3))
	}
	var d decNum
	f.Fuzz(func(t *testing.T, s string, scale uint8) {
		sc := int(scale % 39)
		if !d.parseDecimal([]byte(s)) {
			return
		}
		// big.Rat expands exponents: keep them small enough to compute.
		if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(s[i+1:], "+-0")) > 3 {
			return
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("parseDecimal takes %q, big.Rat does not", s)
		}
		if (r.Sign() < 0) != d.neg {
			t.Fatalf("%q: sign %v", s, d.neg)
		}
		r.Abs(r)
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(sc)), nil)))
		q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
		hi, lo, nd, inexact := d.unscaled(sc)
		wantDigits := len(q.String())
		if q.Sign() == 0 {
			wantDigits = 0
		}
		if nd != wantDigits || inexact != (rem.Sign() != 0) {
			t.Fatalf("%q scale %d: digits %d inexact %v, want %d %v", s, sc, nd, inexact, wantDigits, rem.Sign() != 0)
		}
		if nd <= 38 {
			got := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
			got.Or(got, new(big.Int).SetUint64(lo))
			if got.Cmp(q) != 0 {
				t.Fatalf("%q scale %d: %s, want %s", s, sc, got, q)
			}
		}
	})
}

// FuzzTimestamp checks parseTimestamp against time.Parse: what it takes,
// with or without a zone ('T', 't' or ' ' before the time; no zone is UTC),
// time.Parse reads as the same instant (to the microsecond, digits beyond
// truncated); and every text of RFC 3339's shape (fixed-width fields, 'T',
// a zone) that time.Parse takes, it takes too.
//
//	go test -run XXX -fuzz FuzzTimestamp ./plugins/delta/internal/encode/
func FuzzTimestamp(f *testing.F) {
	for _, s := range []string{"2026-09-03T21:15:04Z", "2026-09-03T21:15:04", "2026-09-03 21:15:04.5",
		"2026-09-03t21:15:04.123456789+02:00", "2026-09-03T21:15:04-23:59", "0001-01-01 00:00:00", "2024-02-29T23:59:59.999999z",
		"2026-09-03T21:15", "2026-09-03T21:15:04+0200", "2026-09-03T21:15:04.Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, _, ok := parseTimestamp([]byte(s))
		norm := []byte(s)
		if len(norm) > 10 {
			norm[10] = 'T'
		}
		if n := len(norm); n > 0 && norm[n-1] == 'z' {
			norm[n-1] = 'Z'
		}
		if ok && !bytes.HasSuffix(norm, []byte("Z")) && (len(norm) < 6 || norm[len(norm)-3] != ':' || (norm[len(norm)-6] != '+' && norm[len(norm)-6] != '-')) {
			norm = append(norm, 'Z') // no zone: UTC
		}
		want, err := time.Parse(time.RFC3339Nano, string(norm))
		switch {
		case ok && err != nil:
			t.Fatalf("parseTimestamp takes %q, time.Parse(%q): %v", s, norm, err)
		case ok && got != want.Truncate(time.Microsecond).UnixMicro(): // Truncate floors, as cutting digits does
			t.Fatalf("parseTimestamp(%q) = %d, time.Parse %d", s, got, want.UnixMicro())
		case !ok && err == nil && rfc3339Shape(s):
			t.Fatalf("time.Parse takes %q, parseTimestamp does not", s)
		}
	})
}

// rfc3339Shape reports whether s has RFC 3339's fixed-width layout up to
// the seconds and an offset hour below 24: time.Parse also takes a
// one-digit hour and +24:00, RFC 3339 does not.
func rfc3339Shape(s string) bool {
	if len(s) < 20 || strings.Trim(s, "0123456789-:T.Z+") != "" {
		return false
	}
	for i, c := range []byte(s[:19]) {
		want := byte('d')
		switch i {
		case 4, 7:
			want = '-'
		case 10:
			want = 'T'
		case 13, 16:
			want = ':'
		}
		if want == 'd' && !isDigit(c) || want != 'd' && c != want {
			return false
		}
	}
	// time.Parse takes offsets up to +24:59; RFC 3339's hours end at 23.
	if z := s[len(s)-6:]; (z[0] == '+' || z[0] == '-') && z[3] == ':' && z[1:3] > "23" {
		return false
	}
	return true
}
