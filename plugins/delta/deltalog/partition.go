package deltalog

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A partition value goes through three encodings on its way into the log
// (PROTOCOL.md "Partition Value Serialization"; Spark and delta-kernel-rs do
// the same):
//
//	value "US/East:1"
//	  1. serialized, stored in add.partitionValues:  "US/East:1"
//	  2. Hive-escaped in the directory name:          region=US%2FEast%3A1/
//	  3. URI-encoded in add.path:                     region=US%252FEast%253A1/part-….parquet
//
// SerializePartitionValue does step 1, PartitionDir step 2, AddPath step 3.

// HiveDefaultPartition is the directory value for a null (or empty) value.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// SerializePartitionValue renders v, a value of column type t, in the
// protocol's partition value format. It returns nil for null; empty
// strings and empty binaries are null too, as the protocol says.
//
// Accepted Go values: nil; string (parsed for non-string types);
// json.Number; bool; all int/uint kinds and float64/float32 (integral for
// integer types); []byte for binary; time.Time for date/timestamp types;
// int64/int micros since the epoch for timestamp and timestamp_ntz, and days
// since the epoch for date.
//
// Formats: integers in decimal; float/double as Java's toString does
// ("1.0", "1.0E10", "NaN", "Infinity"); decimals with exactly scale
// fractional digits ("234.00000"); booleans "true"/"false"; dates
// YYYY-MM-DD; timestamps as ISO-8601 in UTC with microseconds
// ("2024-06-15T19:30:45.000000Z", the form PROTOCOL.md recommends because
// it is unambiguous); timestamp_ntz as "YYYY-MM-DD HH:MM:SS.ffffff"; binary
// as its bytes (must be valid UTF-8 to be representable in JSON).
func SerializePartitionValue(t DataType, v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	s, err := serializePartitionValue(t, v)
	if err != nil {
		return nil, fmt.Errorf("deltalog: partition value %v (%T) for type %s: %w", v, v, t, err)
	}
	if s == "" {
		return nil, nil
	}
	return &s, nil
}

func serializePartitionValue(t DataType, v any) (string, error) {
	switch t := t.(type) {
	case DecimalType:
		r, err := toRat(v)
		if err != nil {
			return "", err
		}
		return formatDecimalRat(r, t)
	case PrimitiveType:
		switch t {
		case TypeString, TypeBinary:
			return partitionText(t, v)
		case TypeBoolean:
			switch v := v.(type) {
			case bool:
				return strconv.FormatBool(v), nil
			case string:
				b, err := strconv.ParseBool(v)
				if err != nil {
					return "", err
				}
				return strconv.FormatBool(b), nil
			}
			return "", fmt.Errorf("want a bool")
		case TypeByte, TypeShort, TypeInteger, TypeLong:
			n, err := toInt64(v)
			if err != nil {
				return "", err
			}
			if err := checkIntRange(t, n); err != nil {
				return "", err
			}
			return strconv.FormatInt(n, 10), nil
		case TypeFloat, TypeDouble:
			f, err := toFloat64(v)
			if err != nil {
				return "", err
			}
			bits := 64
			if t == TypeFloat {
				bits = 32
			}
			return formatJavaFloat(f, bits), nil
		case TypeDate:
			days, err := toDays(v)
			if err != nil {
				return "", err
			}
			return time.Unix(days*86400, 0).UTC().Format("2006-01-02"), nil
		case TypeTimestamp:
			us, err := toMicros(v, true)
			if err != nil {
				return "", err
			}
			return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z"), nil
		case TypeTimestampNTZ:
			us, err := toMicros(v, false)
			if err != nil {
				return "", err
			}
			return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.000000"), nil
		}
	}
	return "", fmt.Errorf("type cannot be a partition column")
}

// partitionText is a string or binary partition value as it is (binary
// only when valid UTF-8: a partition value is a string).
func partitionText(t PrimitiveType, v any) (string, error) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		if t == TypeBinary {
			return "", fmt.Errorf("want []byte")
		}
		return "", fmt.Errorf("want a string")
	}
	if t == TypeBinary && !utf8.ValidString(s) {
		return "", fmt.Errorf("binary value is not valid UTF-8 and cannot be a partition value")
	}
	return s, nil
}

// PartitionDir returns the Hive-style directory ("a=1/b=x%2Fy/") for one
// file's partition values, in partition column order; "" for an
// unpartitioned table. Every partition column must have an entry (nil for
// null). Names and values are escaped as Hive's/Spark's escapePathName do;
// null and empty values become __HIVE_DEFAULT_PARTITION__.
func PartitionDir(partitionColumns []string, values PartitionValues) (string, error) {
	var b strings.Builder
	for _, col := range partitionColumns {
		v, ok := values[col]
		if !ok {
			return "", fmt.Errorf("deltalog: no value for partition column %q", col)
		}
		b.WriteString(EscapePartitionPathSegment(col))
		b.WriteByte('=')
		if v == nil || *v == "" {
			b.WriteString(HiveDefaultPartition)
		} else {
			b.WriteString(EscapePartitionPathSegment(*v))
		}
		b.WriteByte('/')
	}
	return b.String(), nil
}

// EscapePartitionPathSegment escapes a partition column name or value for a
// directory name: ASCII controls, DEL and "#%'*/:=?\{[]^ become %XX
// (uppercase hex). Space, '}' and non-ASCII are kept, as Spark does on
// non-Windows systems.
func EscapePartitionPathSegment(s string) string { return percentEncode(s, hiveEscape) }

// percentEncode replaces every byte for which escape is true by %XX
// (uppercase hex), allocating only when something needs escaping.
func percentEncode(s string, escape func(byte) bool) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if escape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if escape(c) {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

func hiveEscape(c byte) bool {
	if c < 0x20 || c == 0x7F {
		return true
	}
	switch c {
	case '"', '#', '%', '\'', '*', '/', ':', '=', '?', '\\', '{', '[', ']', '^':
		return true
	}
	return false
}

// AddPath turns a file's path relative to the table root (directory from
// PartitionDir plus file name, exactly as stored) into the URI form that
// add.path holds: the characters a URI path may not contain raw — ASCII
// controls, space, and "#%<>?[\]^`{|} — are percent-encoded, so the '%' of
// a Hive escape becomes "%25". This is what Hadoop's Path.toUri produces for
// Spark. Non-ASCII characters are kept as UTF-8, as Spark keeps them; URI
// decoding leaves them unchanged.
func AddPath(relPath string) string { return percentEncode(relPath, uriEscape) }

func uriEscape(c byte) bool {
	if c < 0x20 || c == 0x7F {
		return true
	}
	switch c {
	case ' ', '"', '#', '%', '<', '>', '?', '[', '\\', ']', '^', '`', '{', '|', '}':
		return true
	}
	return false
}

// ---- value conversions shared with stats --------------------------------

func toInt64(v any) (int64, error) {
	switch v := v.(type) {
	case int:
		return int64(v), nil
	case int8:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case int64:
		return v, nil
	case uint8:
		return int64(v), nil
	case uint16:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case uint:
		if uint64(v) > math.MaxInt64 {
			return 0, fmt.Errorf("%d overflows int64", v)
		}
		return int64(v), nil
	case uint64:
		if v > math.MaxInt64 {
			return 0, fmt.Errorf("%d overflows int64", v)
		}
		return int64(v), nil
	case float64:
		if v != math.Trunc(v) || v < math.MinInt64 || v >= math.MaxInt64 {
			return 0, fmt.Errorf("%v is not an integer", v)
		}
		return int64(v), nil
	case float32:
		return toInt64(float64(v))
	case json.Number:
		return strconv.ParseInt(string(v), 10, 64)
	case string:
		return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	}
	return 0, fmt.Errorf("want an integer")
}

func checkIntRange(t PrimitiveType, n int64) error {
	var lo, hi int64
	switch t {
	case TypeByte:
		lo, hi = math.MinInt8, math.MaxInt8
	case TypeShort:
		lo, hi = math.MinInt16, math.MaxInt16
	case TypeInteger:
		lo, hi = math.MinInt32, math.MaxInt32
	default:
		return nil
	}
	if n < lo || n > hi {
		return fmt.Errorf("%d out of range for %s", n, t)
	}
	return nil
}

func toFloat64(v any) (float64, error) {
	switch v := v.(type) {
	case float64:
		return v, nil
	case float32:
		return float64(v), nil
	case json.Number:
		return strconv.ParseFloat(string(v), 64)
	case string:
		return strconv.ParseFloat(strings.TrimSpace(v), 64)
	}
	n, err := toInt64(v)
	if err != nil {
		return 0, fmt.Errorf("want a number")
	}
	return float64(n), nil
}

// toDays: days since 1970-01-01.
func toDays(v any) (int64, error) {
	switch v := v.(type) {
	case time.Time:
		y, m, d := v.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400, nil
	case string:
		tm, err := time.Parse("2006-01-02", strings.TrimSpace(v))
		if err != nil {
			return 0, err
		}
		return tm.Unix() / 86400, nil
	}
	return toInt64(v)
}

// PartitionTimestamp parses a timestamp or timestamp_ntz partition value
// as add.partitionValues holds it: Spark's "yyyy-MM-dd HH:mm:ss[.ffffff]"
// or ISO 8601 ("…T…", with or without a zone). Without a zone it is UTC
// (for timestamp_ntz: the wall clock), as the protocol reads it.
func PartitionTimestamp(s string) (time.Time, bool) {
	return parseStatTimestamp(strings.TrimSpace(s))
}

// toMicros: microseconds since the epoch. For timestamp_ntz (utc=false) a
// time.Time contributes its wall clock, whatever its location.
func toMicros(v any, utc bool) (int64, error) {
	if tm, ok := v.(time.Time); ok {
		if !utc {
			y, mo, d := tm.Date()
			h, mi, s := tm.Clock()
			tm = time.Date(y, mo, d, h, mi, s, tm.Nanosecond(), time.UTC)
		}
		return tm.UnixMicro(), nil
	}
	if _, ok := v.(string); ok {
		return 0, fmt.Errorf("want micros since the epoch or a time.Time")
	}
	return toInt64(v)
}

// formatJavaFloat formats like Java's Double.toString/Float.toString, which
// Spark uses for partition values: plain notation with at least one
// fractional digit for 1e-3 <= |v| < 1e7, otherwise d.dddE±n.
func formatJavaFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, bits) // 1.2345E+10, 1E-05
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

func toRat(v any) (*big.Rat, error) {
	switch v := v.(type) {
	case string:
		r, ok := new(big.Rat).SetString(strings.TrimSpace(v))
		if !ok {
			return nil, fmt.Errorf("%q is not a decimal number", v)
		}
		return r, nil
	case json.Number:
		return toRat(string(v))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%v is not a decimal number", v)
		}
		// The shortest decimal that round-trips, not the binary value.
		return toRat(strconv.FormatFloat(v, 'f', -1, 64))
	case float32:
		return toRat(strconv.FormatFloat(float64(v), 'f', -1, 32))
	case *big.Rat:
		return v, nil
	}
	n, err := toInt64(v)
	if err != nil {
		return nil, fmt.Errorf("want a decimal number")
	}
	return new(big.Rat).SetInt64(n), nil
}

// unscaledDecimal converts r to the unscaled integer of a decimal(p,s),
// refusing values that need rounding or exceed the precision: a writer must
// store the value, not an approximation of it.
func unscaledDecimal(r *big.Rat, t DecimalType) (*big.Int, error) {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)))
	if !scaled.IsInt() {
		return nil, fmt.Errorf("%s has more than %d fractional digits", r.FloatString(t.Scale+4), t.Scale)
	}
	u := scaled.Num()
	if len(new(big.Int).Abs(u).String()) > t.Precision {
		return nil, fmt.Errorf("%s exceeds precision %d", r.FloatString(t.Scale), t.Precision)
	}
	return u, nil
}

func formatDecimalRat(r *big.Rat, t DecimalType) (string, error) {
	u, err := unscaledDecimal(r, t)
	if err != nil {
		return "", err
	}
	return formatUnscaled(u.String(), t.Scale), nil
}

// formatUnscaled renders an unscaled decimal (base-10 digits, optional '-')
// with exactly scale fractional digits: ("-5", 2) -> "-0.05".
func formatUnscaled(digits string, scale int) string {
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}
