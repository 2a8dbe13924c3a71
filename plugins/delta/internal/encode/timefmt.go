package encode

// Hand-written date and timestamp parsing: time.Parse allocates and
// accepts a different set of layouts than the sink documents.

const (
	usPerSecond = 1_000_000
	usPerDay    = 86_400 * usPerSecond
)

// daysFromCivil returns days since 1970-01-01 for a proleptic Gregorian date
// (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func digits2(s []byte, i int) (int, bool) {
	if i+2 > len(s) || !isDigit(s[i]) || !isDigit(s[i+1]) {
		return 0, false
	}
	return int(s[i]-'0')*10 + int(s[i+1]-'0'), true
}

// parseDate parses YYYY-MM-DD at the start of s and returns days since the
// epoch and the bytes consumed.
func parseDate(s []byte) (int64, bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y1, ok1 := digits2(s, 0)
	y2, ok2 := digits2(s, 2)
	mo, ok3 := digits2(s, 5)
	d, ok4 := digits2(s, 8)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0, false
	}
	y := y1*100 + y2
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return 0, false
	}
	return daysFromCivil(y, mo, d), true
}

// parseTimestamp accepts exactly what the sink documents:
//
//	RFC 3339 with a zone:  2026-09-03T21:15:04Z, 2026-09-03T21:15:04.123456+02:00
//	                       ('T', 't' or ' ' between date and time, 'Z' or 'z')
//	no zone (read as UTC): 2026-09-03 21:15:04, 2026-09-03T21:15:04.5
//
// Fractional seconds may have any number of digits; digits past the
// microsecond are truncated, and cut reports that one of them was not 0
// (the value lost precision). The result is microseconds since the epoch.
func parseTimestamp(s []byte) (us int64, cut, ok bool) {
	if len(s) < 19 {
		return 0, false, false
	}
	days, ok := parseDate(s)
	if !ok {
		return 0, false, false
	}
	sep := s[10]
	if sep != 'T' && sep != 't' && sep != ' ' {
		return 0, false, false
	}
	hh, ok1 := digits2(s, 11)
	mm, ok2 := digits2(s, 14)
	ss, ok3 := digits2(s, 17)
	if !ok1 || !ok2 || !ok3 || s[13] != ':' || s[16] != ':' || hh > 23 || mm > 59 || ss > 59 {
		return 0, false, false
	}
	us = days*usPerDay + int64(hh*3600+mm*60+ss)*usPerSecond
	i := 19
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		frac := int64(0)
		for ; i < len(s) && isDigit(s[i]); i++ {
			if i-start < 6 {
				frac = frac*10 + int64(s[i]-'0')
			} else if s[i] != '0' {
				cut = true
			}
		}
		n := i - start
		if n == 0 {
			return 0, false, false
		}
		for ; n < 6; n++ {
			frac *= 10
		}
		us += frac
	}
	if i == len(s) {
		// No zone: read as UTC, with 'T' as with a space, so the two
		// spellings of one local time never land on different instants.
		return us, cut, true
	}
	switch s[i] {
	case 'Z', 'z':
		i++
	case '+', '-':
		oh, ok1 := digits2(s, i+1)
		om, ok2 := digits2(s, i+4)
		if !ok1 || !ok2 || i+3 >= len(s) || s[i+3] != ':' || oh > 23 || om > 59 {
			return 0, false, false
		}
		off := int64(oh*3600+om*60) * usPerSecond
		if s[i] == '+' {
			us -= off
		} else {
			us += off
		}
		i += 6
	default:
		return 0, false, false
	}
	return us, cut, i == len(s)
}
