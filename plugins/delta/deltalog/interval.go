package deltalog

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseInterval parses a Delta table-property duration such as
// delta.setTransactionRetentionDuration ("interval 7 days"). The syntax is
// the subset of Spark's CalendarInterval strings that Delta tables use in
// practice: the word "interval" (optional, case-insensitive) followed by one
// or more "<integer> <unit>" pairs, units nanosecond(s) through week(s),
// singular or plural. Months and years are rejected: they have no fixed
// length, and Spark itself refuses them for these properties. Negative
// values are rejected.
func ParseInterval(s string) (time.Duration, error) {
	fields := strings.Fields(strings.ToLower(s))
	if len(fields) > 0 && fields[0] == "interval" {
		fields = fields[1:]
	}
	if len(fields) == 0 || len(fields)%2 != 0 {
		return 0, fmt.Errorf("deltalog: %q is not an interval", s)
	}
	var total time.Duration
	for i := 0; i < len(fields); i += 2 {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("deltalog: interval %q: bad number %q", s, fields[i])
		}
		if n < 0 {
			return 0, fmt.Errorf("deltalog: interval %q is negative", s)
		}
		unit, ok := intervalUnits[strings.TrimSuffix(fields[i+1], "s")]
		if !ok {
			return 0, fmt.Errorf("deltalog: interval %q: unknown or unsupported unit %q", s, fields[i+1])
		}
		if n > int64(math.MaxInt64/unit) || total > math.MaxInt64-time.Duration(n)*unit {
			return 0, fmt.Errorf("deltalog: interval %q overflows", s)
		}
		total += time.Duration(n) * unit
	}
	return total, nil
}

var intervalUnits = map[string]time.Duration{
	"nanosecond":  time.Nanosecond,
	"microsecond": time.Microsecond,
	"millisecond": time.Millisecond,
	"second":      time.Second,
	"minute":      time.Minute,
	"hour":        time.Hour,
	"day":         24 * time.Hour,
	"week":        7 * 24 * time.Hour,
}
