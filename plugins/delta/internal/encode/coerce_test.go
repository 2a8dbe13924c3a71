package encode_test

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

func us(y int, mo time.Month, d, h, mi, s, ns int) int64 {
	return time.Date(y, mo, d, h, mi, s, ns, time.UTC).UnixMicro()
}

func days(y int, mo time.Month, d int) int32 {
	return int32(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// rawValue maps a Parquet value to the Go value the cases below expect.
func rawValue(v parquet.Value) any {
	if v.IsNull() {
		return nil
	}
	switch v.Kind() {
	case parquet.Boolean:
		return v.Boolean()
	case parquet.Int32:
		return v.Int32()
	case parquet.Int64:
		return v.Int64()
	case parquet.Float:
		return v.Float()
	case parquet.Double:
		return v.Double()
	case parquet.ByteArray:
		return string(v.ByteArray())
	case parquet.FixedLenByteArray:
		return v.ByteArray()
	}
	return v
}

// unscaled renders a decimal's big-endian two's complement bytes as an
// integer string.
func unscaled(b []byte) string {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n.String()
}

// The spec's coercion table, one row per case, plus everything the
// writer must reject. Each case writes {"v": <in>} to a one-column table.
var coercionCases = []struct {
	name     string
	typ      string // Delta type JSON
	nullable bool
	in       string // JSON value of "v"; "" means the field is absent
	want     any    // raw Parquet value (see rawValue); ignored when err != ""
	err      string // exact error for Add(record, offset 7)
}{
	// string column
	{"string/string", `"string"`, true, `"abc"`, "abc", ""},
	{"string/escapes decoded", `"string"`, true, `"a\"b\\c\u00e9\n\ud83d\ude00"`, "a\"b\\c\u00e9\n\U0001F600", ""},
	{"string/lone surrogate", `"string"`, true, `"x\ud800y"`, "x\uFFFDy", ""},
	{"string/empty", `"string"`, true, `""`, "", ""},
	{"string/integer", `"string"`, true, `42`, "42", ""},
	{"string/number as sent", `"string"`, true, `1.50e+3`, "1.50e+3", ""},
	{"string/negative", `"string"`, true, `-0.0`, "-0.0", ""},
	{"string/true", `"string"`, true, `true`, "true", ""},
	{"string/false", `"string"`, true, `false`, "false", ""},
	{"string/object", `"string"`, true, `{"a":1}`, `{"a":1}`, ""},
	{"string/object compacted", `"string"`, true, "{ \"a\" : [ 1 , \"x  y\" ] ,\n\t\"b\":{} }", `{"a":[1,"x  y"],"b":{}}`, ""},
	{"string/object escapes kept", `"string"`, true, `{"k\"":"\u00e9\n"}`, `{"k\"":"\u00e9\n"}`, ""},
	{"string/array", `"string"`, true, `[1, "two", null, [true]]`, `[1,"two",null,[true]]`, ""},
	{"string/null", `"string"`, true, `null`, nil, ""},
	{"string/absent", `"string"`, true, ``, nil, ""},

	// timestamp: RFC 3339
	{"ts/rfc3339 Z", `"timestamp"`, true, `"2026-09-03T21:15:04Z"`, us(2026, 9, 3, 21, 15, 4, 0), ""},
	{"ts/rfc3339 lower", `"timestamp"`, true, `"2026-09-03t21:15:04z"`, us(2026, 9, 3, 21, 15, 4, 0), ""},
	{"ts/rfc3339 offset", `"timestamp"`, true, `"2026-09-03T23:15:04+02:00"`, us(2026, 9, 3, 21, 15, 4, 0), ""},
	{"ts/rfc3339 negative offset", `"timestamp"`, true, `"2026-09-03T16:45:04-04:30"`, us(2026, 9, 3, 21, 15, 4, 0), ""},
	{"ts/rfc3339 millis", `"timestamp"`, true, `"2026-09-03T21:15:04.123Z"`, us(2026, 9, 3, 21, 15, 4, 123000000), ""},
	{"ts/rfc3339 nanos truncated", `"timestamp"`, true, `"2026-09-03T21:15:04.123456789Z"`, us(2026, 9, 3, 21, 15, 4, 123456000), ""},
	{"ts/rfc3339 space and zone", `"timestamp"`, true, `"2026-09-03 21:15:04Z"`, us(2026, 9, 3, 21, 15, 4, 0), ""},
	{"ts/rfc3339 before epoch", `"timestamp"`, true, `"1969-12-31T23:59:59.999999Z"`, int64(-1), ""},
	{"ts/rfc3339 offset crosses day", `"timestamp"`, true, `"2026-01-01T00:30:00+01:00"`, us(2025, 12, 31, 23, 30, 0, 0), ""},
	// timestamp: space form read as UTC
	{"ts/space", `"timestamp"`, true, `"2026-09-03 21:15:04"`, us(2026, 9, 3, 21, 15, 4, 0), ""},
	{"ts/space fraction", `"timestamp"`, true, `"2026-09-03 21:15:04.5"`, us(2026, 9, 3, 21, 15, 4, 500000000), ""},
	{"ts/space leap day", `"timestamp"`, true, `"2024-02-29 00:00:00"`, us(2024, 2, 29, 0, 0, 0, 0), ""},
	{"ts/year 0001", `"timestamp"`, true, `"0001-01-01 00:00:00"`, us(1, 1, 1, 0, 0, 0, 0), ""},
	// timestamp: 'T' without a zone is read as UTC, the same instant as the space form
	{"ts/T without zone", `"timestamp"`, true, `"2026-09-03T21:15:04"`, us(2026, 9, 3, 21, 15, 4, 0), ""},
	{"ts/t without zone", `"timestamp"`, true, `"2026-09-03t21:15:04"`, us(2026, 9, 3, 21, 15, 4, 0), ""},
	{"ts/T fraction without zone", `"timestamp"`, true, `"2026-09-03T21:15:04.000250"`, us(2026, 9, 3, 21, 15, 4, 250000), ""},
	{"ts/T without seconds", `"timestamp"`, true, `"2026-09-03T21:15"`, nil,
		`Invalid record value: field "v": cannot parse "2026-09-03T21:15" as a timestamp (record 0, offset 7)`},
	{"ts/T bad zone", `"timestamp"`, true, `"2026-09-03T21:15:04 UTC"`, nil,
		`Invalid record value: field "v": cannot parse "2026-09-03T21:15:04 UTC" as a timestamp (record 0, offset 7)`},
	// timestamp: integers pass through as microseconds
	{"ts/integer", `"timestamp"`, true, `1788477304000000`, int64(1788477304000000), ""},
	{"ts/negative integer", `"timestamp"`, true, `-5`, int64(-5), ""},
	{"ts/integral with exponent", `"timestamp"`, true, `1.5e6`, int64(1500000), ""},
	{"ts/null", `"timestamp"`, true, `null`, nil, ""},
	// timestamp: everything else fails
	{"ts/garbage", `"timestamp"`, true, `"yesterday"`, nil,
		`Invalid record value: field "v": cannot parse "yesterday" as a timestamp (record 0, offset 7)`},
	{"ts/date only", `"timestamp"`, true, `"2026-09-03"`, nil,
		`Invalid record value: field "v": cannot parse "2026-09-03" as a timestamp (record 0, offset 7)`},
	{"ts/bad month", `"timestamp"`, true, `"2026-13-03 21:15:04"`, nil,
		`Invalid record value: field "v": cannot parse "2026-13-03 21:15:04" as a timestamp (record 0, offset 7)`},
	{"ts/not a leap year", `"timestamp"`, true, `"2026-02-29 21:15:04"`, nil,
		`Invalid record value: field "v": cannot parse "2026-02-29 21:15:04" as a timestamp (record 0, offset 7)`},
	{"ts/hour 24", `"timestamp"`, true, `"2026-09-03 24:00:00"`, nil,
		`Invalid record value: field "v": cannot parse "2026-09-03 24:00:00" as a timestamp (record 0, offset 7)`},
	{"ts/empty fraction", `"timestamp"`, true, `"2026-09-03 21:15:04."`, nil,
		`Invalid record value: field "v": cannot parse "2026-09-03 21:15:04." as a timestamp (record 0, offset 7)`},
	{"ts/offset without colon", `"timestamp"`, true, `"2026-09-03T21:15:04+0200"`, nil,
		`Invalid record value: field "v": cannot parse "2026-09-03T21:15:04+0200" as a timestamp (record 0, offset 7)`},
	{"ts/trailing space", `"timestamp"`, true, `"2026-09-03 21:15:04 "`, nil,
		`Invalid record value: field "v": cannot parse "2026-09-03 21:15:04 " as a timestamp (record 0, offset 7)`},
	{"ts/escaped quote shown", `"timestamp"`, true, `"a\"b\n"`, nil,
		`Invalid record value: field "v": cannot parse "a\"b\n" as a timestamp (record 0, offset 7)`},
	{"ts/long value truncated", `"timestamp"`, true, `"` + strings.Repeat("x", 200) + `"`, nil,
		`Invalid record value: field "v": cannot parse "` + strings.Repeat("x", 64) + `..." as a timestamp (record 0, offset 7)`},
	{"ts/fractional number", `"timestamp"`, true, `1.5`, nil,
		`Invalid record value: field "v": expected timestamp, got fractional number 1.5 (record 0, offset 7)`},
	{"ts/boolean", `"timestamp"`, true, `true`, nil,
		`Invalid record value: field "v": expected timestamp, got JSON boolean (record 0, offset 7)`},
	{"ts/object", `"timestamp"`, true, `{"s":1}`, nil,
		`Invalid record value: field "v": expected timestamp, got JSON object (record 0, offset 7)`},
	// timestamp_ntz: the same rules
	{"ntz/rfc3339", `"timestamp_ntz"`, true, `"2026-09-03T23:15:04+02:00"`, us(2026, 9, 3, 21, 15, 4, 0), ""},
	{"ntz/space", `"timestamp_ntz"`, true, `"2026-09-03 21:15:04.000001"`, us(2026, 9, 3, 21, 15, 4, 1000), ""},
	{"ntz/integer", `"timestamp_ntz"`, true, `42`, int64(42), ""},
	{"ntz/T without zone", `"timestamp_ntz"`, true, `"2026-09-03T21:15:04.5"`, us(2026, 9, 3, 21, 15, 4, 500000000), ""},
	{"ntz/garbage", `"timestamp_ntz"`, true, `"soon"`, nil,
		`Invalid record value: field "v": cannot parse "soon" as a timestamp (record 0, offset 7)`},

	// integers: pass through, range checked
	{"long/value", `"long"`, true, `123`, int64(123), ""},
	{"long/max", `"long"`, true, `9223372036854775807`, int64(math.MaxInt64), ""},
	{"long/min", `"long"`, true, `-9223372036854775808`, int64(math.MinInt64), ""},
	{"long/over max", `"long"`, true, `9223372036854775808`, nil,
		`Invalid record value: field "v": value 9223372036854775808 out of range for long (record 0, offset 7)`},
	{"long/under min", `"long"`, true, `-9223372036854775809`, nil,
		`Invalid record value: field "v": value -9223372036854775809 out of range for long (record 0, offset 7)`},
	{"long/huge", `"long"`, true, `1e30`, nil,
		`Invalid record value: field "v": value 1e30 out of range for long (record 0, offset 7)`},
	{"long/integral fraction", `"long"`, true, `5.000`, int64(5), ""},
	{"long/integral exponent", `"long"`, true, `12e2`, int64(1200), ""},
	{"long/negative zero", `"long"`, true, `-0`, int64(0), ""},
	{"long/fractional", `"long"`, true, `5.5`, nil,
		`Invalid record value: field "v": expected long, got fractional number 5.5 (record 0, offset 7)`},
	{"long/tiny", `"long"`, true, `1e-30`, nil,
		`Invalid record value: field "v": expected long, got fractional number 1e-30 (record 0, offset 7)`},
	{"long/string", `"long"`, true, `"5"`, nil,
		`Invalid record value: field "v": expected long, got JSON string (record 0, offset 7)`},
	{"long/boolean", `"long"`, true, `false`, nil,
		`Invalid record value: field "v": expected long, got JSON boolean (record 0, offset 7)`},
	{"long/array", `"long"`, true, `[1]`, nil,
		`Invalid record value: field "v": expected long, got JSON array (record 0, offset 7)`},
	{"integer/max", `"integer"`, true, `2147483647`, int32(math.MaxInt32), ""},
	{"integer/min", `"integer"`, true, `-2147483648`, int32(math.MinInt32), ""},
	{"integer/over", `"integer"`, true, `2147483648`, nil,
		`Invalid record value: field "v": value 2147483648 out of range for integer (record 0, offset 7)`},
	{"integer/fractional", `"integer"`, true, `0.1`, nil,
		`Invalid record value: field "v": expected integer, got fractional number 0.1 (record 0, offset 7)`},
	{"short/max", `"short"`, true, `32767`, int32(32767), ""},
	{"short/min", `"short"`, true, `-32768`, int32(-32768), ""},
	{"short/over", `"short"`, true, `32768`, nil,
		`Invalid record value: field "v": value 32768 out of range for short (record 0, offset 7)`},
	{"short/under", `"short"`, true, `-32769`, nil,
		`Invalid record value: field "v": value -32769 out of range for short (record 0, offset 7)`},
	{"byte/max", `"byte"`, true, `127`, int32(127), ""},
	{"byte/min", `"byte"`, true, `-128`, int32(-128), ""},
	{"byte/over", `"byte"`, true, `128`, nil,
		`Invalid record value: field "v": value 128 out of range for byte (record 0, offset 7)`},
	{"byte/under", `"byte"`, true, `-129`, nil,
		`Invalid record value: field "v": value -129 out of range for byte (record 0, offset 7)`},
	{"byte/string", `"byte"`, true, `"1"`, nil,
		`Invalid record value: field "v": expected byte, got JSON string (record 0, offset 7)`},

	// floating point
	{"double/decimal", `"double"`, true, `1.5`, 1.5, ""},
	{"double/integer", `"double"`, true, `3`, 3.0, ""},
	{"double/negative", `"double"`, true, `-0.1`, -0.1, ""},
	{"double/exponent", `"double"`, true, `6.02214076e23`, 6.02214076e23, ""},
	{"double/many digits", `"double"`, true, `0.30000000000000004`, 0.30000000000000004, ""},
	{"double/max", `"double"`, true, `1.7976931348623157e308`, math.MaxFloat64, ""},
	{"double/overflow", `"double"`, true, `1e400`, nil,
		`Invalid record value: field "v": value 1e400 out of range for double (record 0, offset 7)`},
	{"double/string", `"double"`, true, `"1.5"`, nil,
		`Invalid record value: field "v": expected double, got JSON string (only "NaN", "Infinity" and "-Infinity" are read from strings) (record 0, offset 7)`},
	{"double/NaN", `"double"`, true, `"NaN"`, math.NaN(), ""},
	{"double/Infinity", `"double"`, true, `"Infinity"`, math.Inf(1), ""},
	{"double/-Infinity", `"double"`, true, `"-Infinity"`, math.Inf(-1), ""},
	{"double/nan lower case", `"double"`, true, `"nan"`, nil,
		`Invalid record value: field "v": expected double, got JSON string (only "NaN", "Infinity" and "-Infinity" are read from strings) (record 0, offset 7)`},
	{"double/+Infinity", `"double"`, true, `"+Infinity"`, nil,
		`Invalid record value: field "v": expected double, got JSON string (only "NaN", "Infinity" and "-Infinity" are read from strings) (record 0, offset 7)`},
	{"float/NaN", `"float"`, true, `"NaN"`, float32(math.NaN()), ""},
	{"float/Infinity", `"float"`, true, `"Infinity"`, float32(math.Inf(1)), ""},
	{"float/-Infinity", `"float"`, true, `"-Infinity"`, float32(math.Inf(-1)), ""},
	{"float/Inf", `"float"`, true, `"Inf"`, nil,
		`Invalid record value: field "v": expected float, got JSON string (only "NaN", "Infinity" and "-Infinity" are read from strings) (record 0, offset 7)`},
	{"float/value", `"float"`, true, `1.25`, float32(1.25), ""},
	{"float/rounded", `"float"`, true, `0.1`, float32(0.1), ""},
	{"float/overflow", `"float"`, true, `3.5e38`, nil,
		`Invalid record value: field "v": value 3.5e38 out of range for float (record 0, offset 7)`},

	// boolean
	{"boolean/true", `"boolean"`, true, `true`, true, ""},
	{"boolean/false", `"boolean"`, true, `false`, false, ""},
	{"boolean/string", `"boolean"`, true, `"true"`, nil,
		`Invalid record value: field "v": expected boolean, got JSON string (record 0, offset 7)`},
	{"boolean/number", `"boolean"`, true, `1`, nil,
		`Invalid record value: field "v": expected boolean, got JSON number (record 0, offset 7)`},

	// binary: base64 (standard or URL alphabet, padding optional)
	{"binary/base64", `"binary"`, true, `"aGVsbG8="`, "hello", ""},
	{"binary/unpadded", `"binary"`, true, `"aGVsbG8"`, "hello", ""},
	{"binary/url alphabet", `"binary"`, true, `"-_8="`, "\xfb\xff", ""},
	{"binary/empty", `"binary"`, true, `""`, "", ""},
	{"binary/escaped", `"binary"`, true, `"aGVs\u0062G8="`, "hello", ""},
	{"binary/invalid", `"binary"`, true, `"not base64!"`, nil,
		`Invalid record value: field "v": cannot decode "not base64!" as base64 (record 0, offset 7)`},
	{"binary/number", `"binary"`, true, `12`, nil,
		`Invalid record value: field "v": expected binary, got JSON number (record 0, offset 7)`},

	// date: YYYY-MM-DD or days since the epoch
	{"date/string", `"date"`, true, `"2026-09-03"`, days(2026, 9, 3), ""},
	{"date/before epoch", `"date"`, true, `"1969-12-31"`, int32(-1), ""},
	{"date/integer", `"date"`, true, `20699`, int32(20699), ""},
	{"date/timestamp string", `"date"`, true, `"2026-09-03T00:00:00Z"`, nil,
		`Invalid record value: field "v": cannot parse "2026-09-03T00:00:00Z" as a date (record 0, offset 7)`},
	{"date/unpadded", `"date"`, true, `"2026-9-3"`, nil,
		`Invalid record value: field "v": cannot parse "2026-9-3" as a date (record 0, offset 7)`},
	{"date/bad day", `"date"`, true, `"2026-04-31"`, nil,
		`Invalid record value: field "v": cannot parse "2026-04-31" as a date (record 0, offset 7)`},
	{"date/out of range", `"date"`, true, `2147483648`, nil,
		`Invalid record value: field "v": value 2147483648 out of range for date (record 0, offset 7)`},

	// decimal: exact or refused, never rounded; precision checked
	{"decimal/number", `"decimal(10,2)"`, true, `12.34`, int64(1234), ""},
	{"decimal/p9 is int32", `"decimal(9,2)"`, true, `12.34`, int32(1234), ""},
	{"decimal/integer", `"decimal(10,2)"`, true, `12`, int64(1200), ""},
	{"decimal/string", `"decimal(10,2)"`, true, `"-12.34"`, int64(-1234), ""},
	{"decimal/string plus", `"decimal(10,2)"`, true, `"+.5"`, int64(50), ""},
	{"decimal/exponent", `"decimal(10,2)"`, true, `1.5e2`, int64(15000), ""},
	{"decimal/needs rounding up", `"decimal(10,2)"`, true, `12.345`, nil,
		`Invalid record value: field "v": value 12.345 has more than 2 fractional digits and would be rounded to fit decimal(10,2) (record 0, offset 7)`},
	{"decimal/needs rounding down", `"decimal(10,2)"`, true, `12.3449999`, nil,
		`Invalid record value: field "v": value 12.3449999 has more than 2 fractional digits and would be rounded to fit decimal(10,2) (record 0, offset 7)`},
	{"decimal/string needs rounding", `"decimal(12,3)"`, true, `"1.2345"`, nil,
		`Invalid record value: field "v": value "1.2345" has more than 3 fractional digits and would be rounded to fit decimal(12,3) (record 0, offset 7)`},
	{"decimal/negative needs rounding", `"decimal(10,2)"`, true, `-0.005`, nil,
		`Invalid record value: field "v": value -0.005 has more than 2 fractional digits and would be rounded to fit decimal(10,2) (record 0, offset 7)`},
	{"decimal/would round to zero", `"decimal(10,2)"`, true, `-0.004`, nil,
		`Invalid record value: field "v": value -0.004 has more than 2 fractional digits and would be rounded to fit decimal(10,2) (record 0, offset 7)`},
	{"decimal/float noise", `"decimal(10,2)"`, true, `0.30000000000000004`, nil,
		`Invalid record value: field "v": value 0.30000000000000004 has more than 2 fractional digits and would be rounded to fit decimal(10,2) (record 0, offset 7)`},
	{"decimal/exponent needs rounding", `"decimal(12,3)"`, true, `"1.2345e-1"`, nil,
		`Invalid record value: field "v": value "1.2345e-1" has more than 3 fractional digits and would be rounded to fit decimal(12,3) (record 0, offset 7)`},
	{"decimal/scale 0 needs rounding", `"decimal(5,0)"`, true, `2.5`, nil,
		`Invalid record value: field "v": value 2.5 is not an integer and would be rounded to fit decimal(5,0) (record 0, offset 7)`},
	{"decimal/trailing zeros", `"decimal(5,2)"`, true, `123.4500000`, int32(12345), ""},
	{"decimal/string trailing zeros", `"decimal(12,3)"`, true, `"1.2340"`, int64(1234), ""},
	{"decimal/exponent exact", `"decimal(12,3)"`, true, `1.2345e1`, int64(12345), ""},
	{"decimal/string exponent exact", `"decimal(12,3)"`, true, `"1.2345E+1"`, int64(12345), ""},
	{"decimal/negative exponent exact", `"decimal(12,3)"`, true, `"12345e-3"`, int64(12345), ""},
	{"decimal/zero with many digits", `"decimal(5,2)"`, true, `"-0.0000000"`, int32(0), ""},
	{"decimal/max", `"decimal(5,2)"`, true, `999.99`, int32(99999), ""},
	{"decimal/too many digits", `"decimal(5,2)"`, true, `1000`, nil,
		`Invalid record value: field "v": value 1000 does not fit decimal(5,2) (record 0, offset 7)`},
	{"decimal/needs rounding at max", `"decimal(5,2)"`, true, `999.995`, nil,
		`Invalid record value: field "v": value 999.995 has more than 2 fractional digits and would be rounded to fit decimal(5,2) (record 0, offset 7)`},
	{"decimal/too many digits and rounding", `"decimal(5,2)"`, true, `"123456.789"`, nil,
		`Invalid record value: field "v": value "123456.789" does not fit decimal(5,2) (record 0, offset 7)`},
	{"decimal/huge exponent", `"decimal(5,2)"`, true, `1e999999999`, nil,
		`Invalid record value: field "v": value 1e999999999 does not fit decimal(5,2) (record 0, offset 7)`},
	{"decimal/tiny exponent", `"decimal(5,2)"`, true, `1e-999999999`, nil,
		`Invalid record value: field "v": value 1e-999999999 has more than 2 fractional digits and would be rounded to fit decimal(5,2) (record 0, offset 7)`},
	{"decimal/scale 0", `"decimal(3,0)"`, true, `-999`, int32(-999), ""},
	{"decimal/unparsable", `"decimal(10,2)"`, true, `"12,5"`, nil,
		`Invalid record value: field "v": cannot parse "12,5" as decimal(10,2) (record 0, offset 7)`},
	{"decimal/boolean", `"decimal(10,2)"`, true, `true`, nil,
		`Invalid record value: field "v": expected decimal(10,2), got JSON boolean (record 0, offset 7)`},
	{"decimal/p18", `"decimal(18,0)"`, true, `-999999999999999999`, int64(-999999999999999999), ""},

	// null and absence
	{"null/non-nullable", `"long"`, false, `null`, nil,
		`Invalid record value: field "v": null in non-nullable field (record 0, offset 7)`},
	{"null/missing non-nullable", `"long"`, false, ``, nil,
		`Invalid record value: field "v": missing non-nullable field (record 0, offset 7)`},
	{"null/never coerced to string", `"string"`, false, `null`, nil,
		`Invalid record value: field "v": null in non-nullable field (record 0, offset 7)`},
	{"null/missing nullable", `"double"`, true, ``, nil, ""},
}

func TestCoercions(t *testing.T) {
	for _, tc := range coercionCases {
		t.Run(tc.name, func(t *testing.T) {
			enc := mustEncoder(t, mustSchema(t, field("v", tc.typ, tc.nullable)), nil, encode.Options{})
			record := `{"v":` + tc.in + `}`
			if tc.in == "" {
				record = `{}`
			}
			got := addErr(enc, record)
			if got != tc.err {
				t.Fatalf("Add(%s):\n got error %q\nwant error %q", record, got, tc.err)
			}
			if tc.err != "" {
				if enc.Len() != 0 {
					t.Fatalf("failed record left %d buffered", enc.Len())
				}
				return
			}
			files := flush(t, enc)
			vals := leafValues(t, files[0].Data, 0)
			if len(vals) != 1 {
				t.Fatalf("%d values, want 1", len(vals))
			}
			got2 := rawValue(vals[0])
			if b, ok := got2.([]byte); ok {
				got2 = unscaled(b)
			}
			if !equalValue(got2, tc.want) {
				t.Fatalf("wrote %#v, want %#v", got2, tc.want)
			}
		})
	}
}

func equalValue(a, b any) bool {
	if fa, ok := a.(float64); ok {
		fb, ok := b.(float64)
		return ok && (fa == fb && math.Signbit(fa) == math.Signbit(fb) || fa != fa && fb != fb)
	}
	if fa, ok := a.(float32); ok {
		fb, ok := b.(float32)
		return ok && (fa == fb || fa != fa && fb != fb)
	}
	return a == b
}

func TestDecimalWide(t *testing.T) {
	for _, tc := range []struct {
		typ, in, want, err string
	}{
		{`"decimal(20,2)"`, `"-123456789012345678.91"`, "-12345678901234567891", ""},
		{`"decimal(20,2)"`, `123456789012345678.91`, "12345678901234567891", ""},
		{`"decimal(38,0)"`, `"99999999999999999999999999999999999999"`, "99999999999999999999999999999999999999", ""},
		{`"decimal(38,0)"`, `"-99999999999999999999999999999999999999"`, "-99999999999999999999999999999999999999", ""},
		{`"decimal(38,0)"`, `"100000000000000000000000000000000000000"`, "",
			`Invalid record value: field "v": value "100000000000000000000000000000000000000" does not fit decimal(38,0) (record 0, offset 7)`},
		{`"decimal(38,10)"`, `1.00000000010`, "10000000001", ""},
		{`"decimal(38,10)"`, `1.00000000005`, "",
			`Invalid record value: field "v": value 1.00000000005 has more than 10 fractional digits and would be rounded to fit decimal(38,10) (record 0, offset 7)`},
		{`"decimal(38,37)"`, `"-9.9999999999999999999999999999999999999"`, "-99999999999999999999999999999999999999", ""},
		{`"decimal(38,37)"`, `"-9.99999999999999999999999999999999999999"`, "",
			`Invalid record value: field "v": value "-9.99999999999999999999999999999999999999" has more than 37 fractional digits and would be rounded to fit decimal(38,37) (record 0, offset 7)`},
		{`"decimal(19,0)"`, `-1`, "-1", ""},
	} {
		t.Run(tc.typ+tc.in, func(t *testing.T) {
			enc := mustEncoder(t, mustSchema(t, field("v", tc.typ, true)), nil, encode.Options{})
			if got := addErr(enc, `{"v":`+tc.in+`}`); got != tc.err {
				t.Fatalf("got error %q, want %q", got, tc.err)
			}
			if tc.err != "" {
				return
			}
			vals := leafValues(t, flush(t, enc)[0].Data, 0)
			if got := unscaled(vals[0].ByteArray()); got != tc.want {
				t.Fatalf("unscaled %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRecordErrorFields(t *testing.T) {
	enc := mustEncoder(t, mustSchema(t, field("v", `"timestamp"`, true)), nil, encode.Options{})
	if err := enc.Add([]byte(`{"v":1}`), 100); err != nil {
		t.Fatal(err)
	}
	err := enc.Add([]byte(`{"v":"x"}`), 101)
	var re *encode.RecordError
	if !errors.As(err, &re) {
		t.Fatalf("error %T, want *RecordError", err)
	}
	if !errors.Is(err, encode.ErrInvalidRecord) {
		t.Fatal("errors.Is(err, ErrInvalidRecord) is false")
	}
	want := encode.RecordError{Index: 1, Offset: 101, Field: "v", Kind: encode.ErrUnparsable, Detail: `cannot parse "x" as a timestamp`}
	if *re != want {
		t.Fatalf("got %+v, want %+v", *re, want)
	}
	if enc.Len() != 1 {
		t.Fatalf("Len %d after a failed record, want 1", enc.Len())
	}
}

func TestInvalidJSON(t *testing.T) {
	enc := mustEncoder(t, mustSchema(t, field("v", `"long"`, true), field("s", `"string"`, true)), nil, encode.Options{})
	for _, tc := range []struct{ in, err string }{
		{``, `Invalid JSON record: empty payload at byte 0 (record 0, offset 7)`},
		{`  `, `Invalid JSON record: empty payload at byte 2 (record 0, offset 7)`},
		{`{"v":1`, `Invalid JSON record: unexpected end of input, expected ',' or '}' after object member at byte 6 (record 0, offset 7)`},
		{`{"v":1,}`, `Invalid JSON record: invalid character '}', expected string for object key at byte 7 (record 0, offset 7)`},
		{`{"v" 1}`, `Invalid JSON record: invalid character '1', expected ':' after object key at byte 5 (record 0, offset 7)`},
		{`{'v':1}`, `Invalid JSON record: invalid character '\'', expected string for object key at byte 1 (record 0, offset 7)`},
		{`{"v":01}`, `Invalid JSON record: invalid character '1', expected ',' or '}' after object member at byte 6 (record 0, offset 7)`},
		{`{"v":1.}`, `Invalid JSON record: field "v": invalid number at byte 7 (record 0, offset 7)`},
		{`{"v":NaN}`, `Invalid JSON record: field "v": invalid character 'N' looking for a value at byte 5 (record 0, offset 7)`},
		{`{"v":1} x`, `Invalid JSON record: unexpected data after the top-level object at byte 8 (record 0, offset 7)`},
		{`{"v":1}{}`, `Invalid JSON record: unexpected data after the top-level object at byte 7 (record 0, offset 7)`},
		{`{"s":"a` + "\x01" + `"}`, `Invalid JSON record: field "s": control character in string at byte 7 (record 0, offset 7)`},
		{`{"s":"a` + "\xff" + `"}`, `Invalid JSON record: field "s": invalid UTF-8 in string at byte 7 (record 0, offset 7)`},
		{`{"s":"\x"}`, `Invalid JSON record: field "s": invalid escape in string at byte 6 (record 0, offset 7)`},
		{`{"s":"\u12"}`, `Invalid JSON record: field "s": invalid \u escape in string at byte 6 (record 0, offset 7)`},
		{`{"s":tru}`, `Invalid JSON record: field "s": invalid literal at byte 5 (record 0, offset 7)`},
		{`{"x":[1,2}`, `Invalid JSON record: invalid character '}', expected ',' or ']' after array element at byte 9 (record 0, offset 7)`},
		{`{"s":{"a":}}`, `Invalid JSON record: field "s": invalid character '}' looking for a value at byte 10 (record 0, offset 7)`},
		{`{"v":"1"x}`, `Invalid JSON record: invalid character 'x', expected ',' or '}' after object member at byte 8 (record 0, offset 7)`},
		{`[1]`, `Invalid JSON record: payload is a JSON array, not an object (record 0, offset 7)`},
		{`"s"`, `Invalid JSON record: payload is a JSON string, not an object (record 0, offset 7)`},
		{`null`, `Invalid JSON record: payload is a JSON null, not an object (record 0, offset 7)`},
		{`12`, `Invalid JSON record: payload is a JSON number, not an object (record 0, offset 7)`},
		{`[1`, `Invalid JSON record: unexpected end of input, expected ',' or ']' after array element at byte 2 (record 0, offset 7)`},
		{`{"x":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`, `Invalid JSON record: nesting deeper than 1000 levels at byte 1004 (record 0, offset 7)`},
	} {
		enc.Reset()
		if got := addErr(enc, tc.in); got != tc.err {
			t.Errorf("Add(%.40q):\n got %q\nwant %q", tc.in, got, tc.err)
		}
	}
	if enc.Len() != 0 {
		t.Fatalf("Len %d, want 0", enc.Len())
	}
	// Whitespace everywhere JSON allows it.
	if got := addErr(enc, " \t\n{ \"v\" :\r 5 , \"s\" : \"x\" } \n"); got != "" {
		t.Fatal(got)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"v":1}`)
	if got := addErr(enc, buf.String()); got != "" {
		t.Fatal(got)
	}
}
