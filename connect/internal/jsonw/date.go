package jsonw

// The days since 1970-01-01 of 0000-01-01 and 9999-12-31: the dates with a
// four-digit year, the only ones RFC 3339 writes.
const (
	MinDay = -719528
	MaxDay = 2932896
)

// AppendDate appends the proleptic Gregorian date of days since
// 1970-01-01 as YYYY-MM-DD (not quoted: a timestamp goes on after it), for
// MinDay <= days <= MaxDay, which the caller checks. The date is worked
// out by integer arithmetic (Howard Hinnant's civil_from_days), unsigned
// and two digits at a time: time.Time's Date splits the seconds again and
// formats through a loop, a tenth of a timestamp-heavy record's decoding.
func AppendDate(dst []byte, days int64) []byte {
	// Days since -0400-03-01, an era before the first date written: no
	// negative numbers, no rounding toward zero to correct.
	z := uint64(days + 719468 + 146097)
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day := doy - (153*mp+2)/5 + 1
	month, year := mp+3, yoe+era*400-400
	if mp >= 10 {
		month -= 12
		year++
	}
	return append(dst,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10))
}
