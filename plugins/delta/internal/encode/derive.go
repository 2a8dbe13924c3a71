package encode

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Derived columns: a column filled from a timestamp held by another field
// of the record, so a table can be partitioned by day or hour without
// generated columns (a table feature this writer refuses).
//
// The spec is a list, as the sink's derived_columns key takes it:
//
//	day = date(event_time), hour = hour(event_time)
//
// Names are bare (any characters but white space, control characters and
// , = ( ) `) or quoted in backticks, two backticks standing for one inside
// them: `event time` = date(`created at`). Function names are
// case-insensitive. A column is derived once, and not from a derived column.

// TimeFunc is what a derived column takes from the source timestamp (UTC).
type TimeFunc uint8

// The functions ParseDerivations knows.
const (
	// FuncDate is the calendar date: a date column, or "YYYY-MM-DD" in a
	// string column.
	FuncDate TimeFunc = iota + 1
	// FuncYear is the year: an integer column, or "YYYY" in a string one.
	FuncYear
	// FuncMonth is the month, 1 to 12 ("01" to "12" in a string column).
	FuncMonth
	// FuncDay is the day of the month, 1 to 31 ("01" to "31").
	FuncDay
	// FuncHour is the hour of the day, 0 to 23 ("00" to "23").
	FuncHour
)

var funcNames = [...]string{FuncDate: "date", FuncYear: "year", FuncMonth: "month", FuncDay: "day", FuncHour: "hour"}

func (f TimeFunc) String() string {
	if int(f) < len(funcNames) && funcNames[f] != "" {
		return funcNames[f]
	}
	return "TimeFunc(" + strconv.Itoa(int(f)) + ")"
}

// Derivation fills Column with Func of the timestamp in the record's
// top-level field Source (see Options.Derive).
type Derivation struct {
	Column string
	Func   TimeFunc
	Source string
}

func (d Derivation) String() string {
	return quoteName(d.Column) + " = " + d.Func.String() + "(" + quoteName(d.Source) + ")"
}

// FormatDerivations renders derivations in the syntax ParseDerivations
// reads.
func FormatDerivations(ds []Derivation) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ", ")
}

// quoteName writes a name bare when it can be read back bare, else in
// backticks.
func quoteName(s string) string {
	bare := s != ""
	for _, r := range s {
		if !bareRune(r) {
			bare = false
			break
		}
	}
	if bare && utf8.ValidString(s) {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

func bareRune(r rune) bool {
	switch r {
	case ',', '=', '(', ')', '`', utf8.RuneError:
		return false
	}
	return !unicode.IsSpace(r) && !unicode.IsControl(r)
}

// ParseDerivations reads a derived-columns spec (see the syntax above). An
// empty or blank spec is no derivation. A column may be derived once, and
// not from itself. Errors say where the spec is wrong; they quote the spec,
// which is configuration, not data.
func ParseDerivations(spec string) ([]Derivation, error) {
	p := derivParser{s: spec}
	var out []Derivation
	p.space()
	if p.i == len(p.s) {
		return nil, nil
	}
	seen := map[string]bool{}
	for {
		start := p.i
		var d Derivation
		var err error
		if d.Column, err = p.name("a column name"); err != nil {
			return nil, err
		}
		if err := p.expect('=', "'=' after the column name"); err != nil {
			return nil, err
		}
		p.space()
		fnAt := p.i
		fn, err := p.name("a function name")
		if err != nil {
			return nil, err
		}
		for f := FuncDate; f <= FuncHour; f++ {
			if strings.EqualFold(fn, f.String()) {
				d.Func = f
			}
		}
		if d.Func == 0 {
			return nil, p.errAt(fnAt, "unknown function %q (one of date, year, month, day, hour)", fn)
		}
		if err := p.expect('(', "'(' after the function name"); err != nil {
			return nil, err
		}
		if d.Source, err = p.name("a field name"); err != nil {
			return nil, err
		}
		if err := p.expect(')', "')' after the field name"); err != nil {
			return nil, err
		}
		switch {
		case seen[strings.ToLower(d.Column)]:
			return nil, p.errAt(start, "column %q is derived twice", d.Column)
		case strings.EqualFold(d.Column, d.Source):
			return nil, p.errAt(start, "column %q is derived from itself", d.Column)
		}
		seen[strings.ToLower(d.Column)] = true
		out = append(out, d)
		p.space()
		if p.i == len(p.s) {
			break
		}
		if err := p.expect(',', "',' between derived columns"); err != nil {
			return nil, err
		}
	}
	for _, d := range out {
		if seen[strings.ToLower(d.Source)] {
			return nil, fmt.Errorf("in %q: column %q is derived from %q, itself a derived column", spec, d.Column, d.Source)
		}
	}
	return out, nil
}

type derivParser struct {
	s string
	i int
}

func (p *derivParser) space() {
	for p.i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if !unicode.IsSpace(r) {
			return
		}
		p.i += n
	}
}

func (p *derivParser) errAt(at int, format string, a ...any) error {
	return fmt.Errorf("at byte %d of %q: %s", at, p.s, fmt.Sprintf(format, a...))
}

func (p *derivParser) expect(c byte, what string) error {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return nil
	}
	return p.errAt(p.i, "expected %s, found %s", what, p.found())
}

func (p *derivParser) found() string {
	if p.i >= len(p.s) {
		return "the end"
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.i:])
	return strconv.QuoteRune(r)
}

// name reads a bare or backtick-quoted name.
func (p *derivParser) name(what string) (string, error) {
	p.space()
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '`' {
		var b strings.Builder
		p.i++
		for {
			j := strings.IndexByte(p.s[p.i:], '`')
			if j < 0 {
				return "", p.errAt(start, "unterminated `quoted` name")
			}
			b.WriteString(p.s[p.i : p.i+j])
			p.i += j + 1
			if p.i < len(p.s) && p.s[p.i] == '`' {
				b.WriteByte('`')
				p.i++
				continue
			}
			break
		}
		if b.Len() == 0 {
			return "", p.errAt(start, "empty name")
		}
		if !utf8.ValidString(b.String()) {
			return "", p.errAt(start, "name is not valid UTF-8")
		}
		return b.String(), nil
	}
	for p.i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if !bareRune(r) {
			break
		}
		p.i += n
	}
	if p.i == start {
		return "", p.errAt(start, "expected %s, found %s", what, p.found())
	}
	return p.s[start:p.i], nil
}

// civil returns the UTC calendar fields of a timestamp in microseconds
// since the epoch (proleptic Gregorian; Howard Hinnant's civil_from_days).
func civil(us int64) (year, month, day, hour int, days int64) {
	days = us / usPerDay
	rem := us % usPerDay
	if rem < 0 {
		days--
		rem += usPerDay
	}
	hour = int(rem / (3600 * usPerSecond))
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d), hour, days
}
