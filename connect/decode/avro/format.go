package avro

import (
	"fmt"
	"strconv"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// quote writes a name from a schema as a JSON string (valid UTF-8: the
// schema parser read it from JSON).
func quote(s string) []byte { return jsonw.AppendStringLossy(nil, s) }

// appendDigits writes v >= 0 with at least width digits, zero-padded. Two
// digits, most of a timestamp's fields, are written without the loop: a
// tenth of a timestamp-heavy record's decoding went to it.
func appendDigits(dst []byte, v int64, width int) []byte {
	if width == 2 && v >= 0 && v < 100 {
		u := uint64(v)
		return append(dst, byte('0'+u/10), byte('0'+u%10))
	}
	var buf [20]byte
	i := len(buf)
	for ; width > 0 || v > 0; width-- {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[i:]...)
}

// appendDay writes YYYY-MM-DD; a year outside 0000-9999 has no RFC 3339
// form and is the record's error.
func appendDay(dst []byte, days int64) ([]byte, error) {
	if days < jsonw.MinDay || days > jsonw.MaxDay {
		return dst, fmt.Errorf("date %d days from 1970-01-01 is outside years 0000-9999", days)
	}
	return jsonw.AppendDate(dst, days), nil
}

func appendDate(dst []byte, days int64) ([]byte, error) {
	dst = append(dst, '"')
	dst, err := appendDay(dst, days)
	return append(dst, '"'), err
}

// appendClock writes HH:MM:SS.f of units (10^digits per second) into the day.
func appendClock(dst []byte, units int64, digits int) []byte {
	perSec := int64(1000)
	if digits == 6 {
		perSec = 1000000
	}
	sec := units / perSec
	dst = appendDigits(dst, sec/3600, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, sec/60%60, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, sec%60, 2)
	dst = append(dst, '.')
	return appendDigits(dst, units%perSec, digits)
}

// appendTime writes a time of day; a value outside one day is an error.
func appendTime(dst []byte, v int64, digits int) ([]byte, error) {
	day := int64(86400000)
	if digits == 6 {
		day = 86400000000
	}
	if v < 0 || v >= day {
		return dst, fmt.Errorf("time of day %d is outside one day", v)
	}
	dst = append(dst, '"')
	dst = appendClock(dst, v, digits)
	return append(dst, '"'), nil
}

// appendTimestamp writes an RFC 3339 timestamp of v units since the epoch,
// in UTC with a "Z", or without a zone for a local timestamp.
func appendTimestamp(dst []byte, v int64, digits int, utc bool) ([]byte, error) {
	perDay := int64(86400000)
	if digits == 6 {
		perDay = 86400000000
	}
	days, units := v/perDay, v%perDay
	if units < 0 {
		days, units = days-1, units+perDay
	}
	dst = append(dst, '"')
	dst, err := appendDay(dst, days)
	if err != nil {
		return dst, err
	}
	dst = append(dst, 'T')
	dst = appendClock(dst, units, digits)
	if utc {
		dst = append(dst, 'Z')
	}
	return append(dst, '"'), nil
}
