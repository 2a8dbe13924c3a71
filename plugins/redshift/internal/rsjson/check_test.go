package rsjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/picomq/heavy-sinks/plugins/redshift/internal/rsjson"
)

func kindOf(err error) rsjson.Kind {
	var e *rsjson.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func TestCheck(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	long := func(n int) string { return `{"s":"` + strings.Repeat("x", n) + `"}` }
	for _, tc := range []struct {
		name string
		in   string
		want rsjson.Kind // 0: accepted
	}{
		{"object", `{"a":1,"b":[true,null,"x"],"c":{"a":2}}`, 0},
		{"scalar string", `"abc"`, 0},
		{"number", ` -1.5e3 `, 0},
		{"null", `null`, 0},
		{"same name in nested objects", `{"a":{"a":{"a":1}}}`, 0},
		{"same name in sibling objects", `[{"a":1},{"a":2}]`, 0},
		{"surrogate pair", `"\ud83d\ude00"`, 0},
		{"escaped backslash before u", `"\\ud800"`, 0},
		{"lone high surrogate", `"x\ud800y"`, rsjson.Surrogate},
		{"lone low surrogate", `{"a":"\udc00"}`, rsjson.Surrogate},
		{"high then not low", `"\ud800\u0041"`, rsjson.Surrogate},
		{"high at the end", `["\uD800"]`, rsjson.Surrogate},
		{"lone surrogate in a key", `{"\udfff":1}`, rsjson.Surrogate},
		{"38-digit integer", `[-99999999999999999999999999999999999999]`, 0},
		{"39-digit integer", `[999999999999999999999999999999999999999]`, rsjson.Number},
		{"leading zeros do not count", `0`, 0},
		{"float8 overflow", `1e400`, rsjson.Number},
		{"float8 underflow", `{"a":-1.5e-400}`, rsjson.Number},
		{"zero with an exponent", `0.0e-999`, 0},
		{"large but finite", `1.7e308`, 0},
		{"empty", ``, rsjson.Syntax},
		{"blank", "  \n", rsjson.Syntax},
		{"truncated", `{"a":`, rsjson.Syntax},
		{"two values", `{} {}`, rsjson.Syntax},
		{"NaN", `NaN`, rsjson.Syntax},
		{"trailing comma", `[1,]`, rsjson.Syntax},
		{"invalid UTF-8 in a string", "\"\xff\"", rsjson.Syntax},
		{"duplicate", `{"a":1,"b":2,"a":3}`, rsjson.Duplicate},
		{"duplicate escaped", `{"a":1,"\u0061":2}`, rsjson.Duplicate},
		{"duplicate nested", `[{"x":{"k":1,"k":1}}]`, rsjson.Duplicate},
		{"depth at the limit", deep(rsjson.MaxDepth), 0},
		{"depth over the limit", deep(rsjson.MaxDepth + 1), rsjson.Depth},
		{"string at the limit", long(rsjson.MaxString), 0},
		{"string over the limit", long(rsjson.MaxString + 1), rsjson.StringLength},
		{"long attribute name", `{"` + strings.Repeat("k", rsjson.MaxString+1) + `":1}`, 0},
		{"NUL in a value", `{"a":"x\u0000y"}`, rsjson.NUL},
		{"NUL in a name", `{"\u0000":1}`, rsjson.NUL},
		{"escapes count decoded", `"` + strings.Repeat(`\u00e9`, rsjson.MaxString/2) + `"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rsjson.Check([]byte(tc.in))
			if got := kindOf(err); got != tc.want || (tc.want == 0) != (err == nil) {
				t.Fatalf("Check = %v (kind %d), want kind %d", err, got, tc.want)
			}
		})
	}
}

// FuzzCheck holds Check to encoding/json's grammar: every input it accepts
// is one JSON value in valid UTF-8, and every syntax refusal is one
// json.Valid or utf8.Valid refuses too.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`"\ud800"`, `1e400`, `{"a":1}`, `[1,{"b":[null]}]`, `{"a":1,"a":2}`, `"x"`, `[[[]]]`, `{"a":{"b":1},"b":2}`, "\"\xc3\"", `1 2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		err := rsjson.Check(p)
		valid := json.Valid(p) && utf8.Valid(p)
		switch kindOf(err) {
		case 0:
			if err != nil {
				t.Fatalf("error of no kind: %v", err)
			}
			if !valid {
				t.Fatalf("accepted %q, which json.Valid/utf8.Valid refuse", p)
			}
		case rsjson.Syntax:
			if valid {
				t.Fatalf("refused %q as syntax (%v), json.Valid accepts it", p, err)
			}
		default:
			if !valid {
				t.Fatalf("refused %q for %v, but it is not even valid JSON", p, err)
			}
		}
	})
}
