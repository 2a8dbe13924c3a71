package jsonw_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// marshal is what encoding/json writes for s, without HTML escaping: the
// rule jsonw follows byte for byte.
func marshal(t testing.TB, s string) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestAppendString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string // want: only where ok
		ok             bool
	}{
		{"empty", "", `""`, true},
		{"plain", "hello world", `"hello world"`, true},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`, true},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`, true},
		{"other controls", "\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`, true},
		{"html stays", "<a href='x'>&</a>", `"<a href='x'>&</a>"`, true},
		{"multi-byte", "hé 😀 €", `"hé 😀 €"`, true},
		{"line separators", "a\u2028b\u2029c", `"a\u2028b\u2029c"`, true},
		{"near line separators", "\u2027\u202a", "\"\u2027\u202a\"", true},
		{"replacement char itself", "\ufffd", "\"\ufffd\"", true},
		{"escape after multi-byte", "é\n", "\"é\\n\"", true},
		{"invalid byte", "a\xffb", "", false},
		{"cut short", "a\xe2\x82", "", false},
		{"surrogate", "\xed\xa0\x80", "", false},
		{"overlong", "\xc0\xaf", "", false},
		{"above U+10FFFF", "\xf4\x90\x80\x80", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// On false the output is a partial string to discard.
			got, ok := jsonw.AppendString([]byte("x"), tc.in)
			if ok != tc.ok || ok && string(got) != "x"+tc.want {
				t.Errorf("AppendString(%q) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
			}
			gotB, okB := jsonw.AppendString(nil, []byte(tc.in))
			if okB != tc.ok || okB && string(gotB) != tc.want {
				t.Errorf("AppendString([]byte(%q)) = %s, %v; want %s, %v", tc.in, gotB, okB, tc.want, tc.ok)
			}
			if tc.ok {
				if m := marshal(t, tc.in); m != tc.want {
					t.Errorf("encoding/json writes %s, the table %s", m, tc.want)
				}
			}
		})
	}
}

func TestAppendStringLossy(t *testing.T) {
	for in, want := range map[string]string{
		"a\xffb":               `"a\ufffdb"`,
		"a\xe2\x82":            `"a\ufffd\ufffd"`, // one per byte, as encoding/json
		"\xed\xa0\x80\n":       `"\ufffd\ufffd\ufffd\n"`,
		"ok\u2028":             `"ok\u2028"`,
		"\x80\x80é":            `"\ufffd\ufffdé"`,
		"\xf0\x9f\x98\x80\xf0": `"😀\ufffd"`,
	} {
		if got := jsonw.AppendStringLossy(nil, in); string(got) != want {
			t.Errorf("AppendStringLossy(%q) = %s, want %s", in, got, want)
		}
		if m := marshal(t, in); m != want {
			t.Errorf("encoding/json writes %q as %s, the table %s", in, m, want)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		bits int
		want string
	}{
		{0, 64, "0"},
		{math.Copysign(0, -1), 64, "-0"},
		{0.1, 64, "0.1"},
		{float64(float32(0.1)), 32, "0.1"},
		{float64(float32(0.1)), 64, "0.10000000149011612"},
		{1e-6, 64, "0.000001"},
		{1e-7, 64, "1e-7"},
		{1.5e-10, 32, "1.5e-10"},
		{1e20, 64, "100000000000000000000"},
		{1e21, 64, "1e+21"},
		{-123.456, 64, "-123.456"},
		{math.MaxFloat64, 64, "1.7976931348623157e+308"},
		{math.MaxFloat32, 32, "3.4028235e+38"},
		{5e-324, 64, "5e-324"},
		{math.NaN(), 64, `"NaN"`},
		{math.Inf(1), 32, `"Infinity"`},
		{math.Inf(-1), 64, `"-Infinity"`},
	} {
		if got := jsonw.AppendFloat(nil, tc.f, tc.bits); string(got) != tc.want {
			t.Errorf("AppendFloat(%v, %d) = %s, want %s", tc.f, tc.bits, got, tc.want)
		}
	}
}

func TestAppendBase64(t *testing.T) {
	for in, want := range map[string]string{
		"":         `""`,
		"\x00\xff": `"AP8="`,
		"hi":       `"aGk="`,
		"abc":      `"YWJj"`,
	} {
		if got := jsonw.AppendBase64([]byte("["), []byte(in)); string(got) != "["+want {
			t.Errorf("AppendBase64(%q) = %s, want [%s", in, got, want)
		}
	}
}

// TestNoAllocations: with room in dst, writing a value allocates nothing
// (a []byte is never converted to a string).
func TestNoAllocations(t *testing.T) {
	dst := make([]byte, 0, 256)
	s := []byte("héllo \"wörld\"\n\u2028 <&> 😀")
	if n := testing.AllocsPerRun(100, func() {
		out, _ := jsonw.AppendString(dst, s)
		out = jsonw.AppendStringLossy(out, s)
		out = jsonw.AppendFloat(out, 1.25e-9, 64)
		_ = jsonw.AppendBase64(out, s)
	}); n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
}
