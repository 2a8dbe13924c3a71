package jsonw_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// FuzzAppendString: the output is encoding/json's own for the string
// (HTML escaping off), byte for byte, and reads back to the same string;
// ok is false exactly when the input is not UTF-8.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\b\f\n\r\t\x00\x1f\x7f", "<&>", "é😀\u2028\u2029", "\xff", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		valid := utf8.ValidString(s)
		lossy := jsonw.AppendStringLossy(nil, s)
		if want := marshal(t, s); string(lossy) != want {
			t.Fatalf("AppendStringLossy(%q) = %s, encoding/json %s", s, lossy, want)
		}
		out, ok := jsonw.AppendString(nil, []byte(s))
		if ok != valid {
			t.Fatalf("AppendString(%q) ok = %v, UTF-8 valid = %v", s, ok, valid)
		}
		if !valid {
			return
		}
		if string(out) != string(lossy) {
			t.Fatalf("AppendString(%q) = %s, AppendStringLossy %s", s, out, lossy)
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil || back != s {
			t.Fatalf("%s reads back as %q (%v), want %q", out, back, err, s)
		}
	})
}

// FuzzAppendFloat: a finite float is a JSON number that reads back to the
// same bits at its width, in encoding/json's form; the others are strings.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []uint64{0, 1 << 63, math.Float64bits(0.1), math.Float64bits(1e-7), math.Float64bits(1e21), math.Float64bits(math.NaN()), math.Float64bits(math.Inf(-1)), 1} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		f64 := math.Float64frombits(bits)
		f32 := math.Float32frombits(uint32(bits))
		for _, c := range []struct {
			f    float64
			bits int
		}{{f64, 64}, {float64(f32), 32}} {
			out := jsonw.AppendFloat(nil, c.f, c.bits)
			if math.IsNaN(c.f) || math.IsInf(c.f, 0) {
				var s string
				if err := json.Unmarshal(out, &s); err != nil || !strings.Contains("NaN Infinity -Infinity", s) {
					t.Fatalf("AppendFloat(%v) = %s", c.f, out)
				}
				continue
			}
			var back float64
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("AppendFloat(%v, %d) = %s: %v", c.f, c.bits, out, err)
			}
			if c.bits == 32 {
				if math.Float32bits(float32(back)) != math.Float32bits(float32(c.f)) {
					t.Fatalf("AppendFloat(%v, 32) = %s reads back as %v", c.f, out, float32(back))
				}
				want, _ := json.Marshal(float32(c.f))
				if string(out) != string(want) {
					t.Fatalf("AppendFloat(%v, 32) = %s, encoding/json %s", c.f, out, want)
				}
				continue
			}
			if math.Float64bits(back) != math.Float64bits(c.f) {
				t.Fatalf("AppendFloat(%v, 64) = %s reads back as %v", c.f, out, back)
			}
			want, _ := json.Marshal(c.f)
			if string(out) != string(want) {
				t.Fatalf("AppendFloat(%v, 64) = %s, encoding/json %s", c.f, out, want)
			}
		}
	})
}
