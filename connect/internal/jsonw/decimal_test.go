package jsonw_test

import (
	"math/big"
	"testing"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// TestAppendDecimal checks each case against math/big's own exact
// formatting of unscaled * 10^-scale (big.Rat.FloatString, which keeps
// scale digits), independent of AppendDecimal's digit shuffling.
func TestAppendDecimal(t *testing.T) {
	unscaled := []string{"0", "1", "-1", "7", "12345", "-12345", "100", "-9223372036854775808",
		"9223372036854775807", "123456789012345678901234567890", "-123456789012345678901234567890"}
	for _, u := range unscaled {
		v, _ := new(big.Int).SetString(u, 10)
		b := twosComplement(v)
		for _, scale := range []int{0, 1, 3, 5, 40, -2} {
			r := new(big.Rat).SetInt(v)
			var want string
			if scale >= 0 {
				r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
				want = `"` + r.FloatString(scale) + `"`
			} else {
				want = `"` + new(big.Int).Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil)).String() + `"`
			}
			if got := string(jsonw.AppendDecimal([]byte("["), b, scale)); got != "["+want {
				t.Errorf("AppendDecimal(%s, scale %d) = %s, want [%s", u, scale, got, want)
			}
		}
	}
	if got := string(jsonw.AppendDecimal(nil, nil, 3)); got != `"0.000"` {
		t.Errorf("no bytes: %s", got)
	}
}

// twosComplement is v's shortest big-endian two's-complement form.
func twosComplement(v *big.Int) []byte {
	n := v.BitLen()/8 + 1
	m := new(big.Int).Set(v)
	if v.Sign() < 0 {
		m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	b := m.FillBytes(make([]byte, n))
	return b
}
