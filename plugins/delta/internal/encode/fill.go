package encode

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/picomq/heavy-sinks/shared/metadata"
)

// Columns the encoder fills itself rather than from the payload field of
// the same name: the pico_* metadata columns (Options.Metadata) and derived
// columns (Options.Derive). The decoder treats such a column's payload
// field as one the table lacks (validated, skipped), and Add fills the
// column once the payload is decoded: the record's metadata, or the
// derivation, wins over the payload.

// Meta is one record's metadata, for AddRecord.
type Meta struct {
	Topic     string
	Partition uint32
	Offset    uint64
	Timestamp int64  // epoch milliseconds
	Key       []byte // nil when the record has no key
	Headers   []Header
}

// Header is one record header, bytes as sent.
type Header struct{ Key, Value []byte }

// ConfigError is New's error for a column Options.Metadata or
// Options.Derive cannot fill: a type that does not fit, a missing column.
// It is the options' fault (or the table's), not the schema's alone, so
// callers report it as a configuration problem.
type ConfigError struct {
	// Derive is set when a derivation is at fault, clear for metadata.
	Derive bool
	Msg    string
}

func (e *ConfigError) Error() string { return e.Msg }

type metaField uint8

const (
	metaTopic metaField = iota + 1
	metaPartition
	metaOffset
	metaTimestamp
	metaKey
	metaHeaders
)

// metaColumns lists the metadata columns and the types each may have.
// isMetaName reports whether a payload field is named like a pico_*
// metadata column, in any case, as a column is matched.
func isMetaName(key []byte) bool {
	for _, mc := range metaColumns {
		if bytes.EqualFold(key, []byte(mc.name)) {
			return true
		}
	}
	return false
}

var metaColumns = []struct {
	name  string
	field metaField
	kinds []kind
	want  string
}{
	{metadata.Topic, metaTopic, []kind{kString}, "string"},
	{metadata.Partition, metaPartition, []kind{kInt, kLong}, "integer or long"},
	{metadata.Offset, metaOffset, []kind{kLong}, "long"},
	{metadata.Timestamp, metaTimestamp, []kind{kLong, kTimestamp, kTimestampNTZ}, "long (epoch milliseconds), timestamp or timestamp_ntz"},
	{metadata.Key, metaKey, []kind{kString, kBinary}, "string (base64) or binary"},
	{metadata.Headers, metaHeaders, []kind{kMap}, "map<string,string>"},
}

// filler is one column the encoder fills.
type filler struct {
	n    *node
	meta metaField // 0 for a derivation
	d    Derivation
	// src is the source column of a derivation when its buffered value is
	// read (timestamp, timestamp_ntz, date); nil when the source field's
	// JSON is captured and read as a timestamp column would (d.caps[capture]).
	src     *node
	capture int
}

// compileFills marks the columns opts fills and returns their fillers
// (metadata first: a derivation may read pico_timestamp) and the names of
// payload fields to capture at the top level (not columns of the table).
func compileFills(root *node, opts Options) ([]*filler, map[string]int, int, error) {
	var fills []*filler
	var capNames map[string]int
	ncap := 0
	if opts.Metadata {
		for _, mc := range metaColumns {
			n := topField(root, mc.name)
			if n == nil {
				continue
			}
			ok := false
			for _, k := range mc.kinds {
				ok = ok || n.kind == k
			}
			if ok && mc.field == metaHeaders {
				ok = n.key.kind == kString && n.val.kind == kString
			}
			if !ok {
				return nil, nil, 0, &ConfigError{Msg: "column " + strconv.Quote(n.name) + " is " + n.typeString() +
					"; the record metadata it is filled with needs " + mc.want}
			}
			n.filled = true
			fills = append(fills, &filler{n: n, meta: mc.field})
		}
	}
	for _, d := range opts.Derive {
		n := topField(root, d.Column)
		if n == nil {
			return nil, nil, 0, &ConfigError{Derive: true, Msg: "derived column " + strconv.Quote(d.Column) + " is not a top-level column of the table"}
		}
		if n.filled {
			return nil, nil, 0, &ConfigError{Derive: true, Msg: "derived column " + strconv.Quote(n.name) + " is also a metadata column (metadata_columns)"}
		}
		var ok bool
		switch d.Func {
		case FuncDate:
			ok = n.kind == kDate || n.kind == kString
		case FuncYear:
			ok = n.kind == kShort || n.kind == kInt || n.kind == kLong || n.kind == kString
		default:
			ok = n.kind == kByte || n.kind == kShort || n.kind == kInt || n.kind == kLong || n.kind == kString
		}
		if !ok {
			want := "byte, short, integer, long or string"
			switch d.Func {
			case FuncDate:
				want = "date or string"
			case FuncYear:
				want = "short, integer, long or string"
			}
			return nil, nil, 0, &ConfigError{Derive: true, Msg: "derived column " + strconv.Quote(n.name) + " is " + n.typeString() +
				"; " + d.Func.String() + "() fills " + want + " columns"}
		}
		n.filled = true
		f := &filler{n: n, d: d}
		fills = append(fills, f)
	}
	// Sources after every target is known: none may be derived itself.
	for _, f := range fills {
		if f.meta != 0 {
			continue
		}
		d := f.d
		s := topField(root, d.Source)
		if s == nil {
			i, seen := capNames[d.Source]
			if !seen {
				if capNames == nil {
					capNames = map[string]int{}
				}
				i, ncap = ncap, ncap+1
				capNames[d.Source] = i
			}
			f.capture = i
			continue
		}
		switch {
		case s.filled && s.kind != kTimestamp && s.kind != kTimestampNTZ:
			return nil, nil, 0, &ConfigError{Derive: true, Msg: "column " + strconv.Quote(f.n.name) + " is derived from " + strconv.Quote(s.name) +
				", which is filled by the sink itself and is not a timestamp"}
		case s.kind == kTimestamp || s.kind == kTimestampNTZ || s.kind == kDate:
			f.src = s
		case s.kind == kString:
			if s.capture == 0 {
				s.capture = ncap + 1
				ncap++
			}
			f.capture = s.capture - 1
		default:
			return nil, nil, 0, &ConfigError{Derive: true, Msg: "column " + strconv.Quote(f.n.name) + " is derived from column " + strconv.Quote(s.name) +
				" of type " + s.typeString() + "; derive from a timestamp, timestamp_ntz, date or string column, or from a field the table does not have"}
		}
	}
	if len(fills) > 0 {
		// The decoder must not match the filled columns' payload fields
		// (byName still finds them: statistics need them).
		for i, f := range root.fields {
			if f.filled {
				f.plainName = false
				if i < 64 {
					root.filledMask |= 1 << i
				}
			}
		}
	}
	return fills, capNames, ncap, nil
}

// topField finds a top-level column by name: exactly, or else
// case-insensitively (Delta column names are unique regardless of case).
func topField(root *node, name string) *node {
	for _, f := range root.fields {
		if f.name == name {
			return f
		}
	}
	for _, f := range root.fields {
		if strings.EqualFold(f.name, name) {
			return f
		}
	}
	return nil
}

func (n *node) typeString() string {
	switch n.kind {
	case kMap:
		return "map<" + n.key.typeString() + "," + n.val.typeString() + ">"
	case kArray:
		return "array<" + n.elem.typeString() + ">"
	}
	return n.typeName()
}

// fill writes the filled columns of buffered record e.nrec.
func (e *Encoder) fill(m *Meta) *valueError {
	for _, f := range e.fills {
		if f.meta == 0 {
			if err := e.fillDerived(f); err != nil {
				return err
			}
		} else if err := e.fillMeta(f, m); err != nil {
			return err.field(f.n.name)
		}
	}
	return nil
}

func (e *Encoder) fillMeta(f *filler, m *Meta) *valueError {
	n := f.n
	switch f.meta {
	case metaHeaders:
		kc, vc := e.cols[n.key.leaf], e.cols[n.val.leaf]
		if len(m.Headers) == 0 {
			kc.null(n.def, 0) // present but empty
			vc.null(n.def, 0)
			return nil
		}
		for i, h := range m.Headers {
			rep := uint8(0)
			if i > 0 {
				rep = n.key.repDepth
			}
			kc.data = metadata.AppendHeaderValue(kc.data, h.Key)
			kc.endBytes(rep)
			vc.data = metadata.AppendHeaderValue(vc.data, h.Value)
			vc.endBytes(rep)
		}
		return nil
	}
	c := e.cols[n.leaf]
	switch f.meta {
	case metaTopic:
		c.data = append(c.data, m.Topic...)
		c.endBytes(0)
	case metaPartition:
		if n.kind == kInt {
			if m.Partition > math.MaxInt32 {
				return valueErr(ErrOutOfRange, "partition "+strconv.FormatUint(uint64(m.Partition), 10)+" out of range for integer")
			}
			c.putInt32(int32(m.Partition), 0)
		} else {
			c.putInt64(int64(m.Partition), 0)
		}
	case metaOffset:
		if m.Offset > math.MaxInt64 {
			return valueErr(ErrOutOfRange, "offset "+strconv.FormatUint(m.Offset, 10)+" out of range for long")
		}
		c.putInt64(int64(m.Offset), 0)
	case metaTimestamp:
		v := m.Timestamp
		if n.kind != kLong {
			if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
				return valueErr(ErrOutOfRange, "timestamp "+strconv.FormatInt(v, 10)+" ms out of range for "+n.typeName())
			}
			v *= 1000
		}
		c.putInt64(v, 0)
	case metaKey:
		if m.Key == nil {
			if !n.nullable {
				return valueErr(ErrNull, "the record has no key and the column is not nullable")
			}
			c.null(n.def-1, 0)
			return nil
		}
		if n.kind == kBinary {
			c.data = append(c.data, m.Key...)
		} else {
			c.data, _ = metadata.AppendKeyBase64(c.data, m.Key)
		}
		c.endBytes(0)
	}
	return nil
}

// fillDerived derives f's column from its source: null when the source is
// null or missing.
func (e *Encoder) fillDerived(f *filler) *valueError {
	us, null, err := e.derivedSource(f)
	if err != nil {
		// The source's value is at fault: name it, and the column.
		err.detail += " (deriving column " + strconv.Quote(f.n.name) + ")"
		return err.field(f.d.Source)
	}
	n := f.n
	c := e.cols[n.leaf]
	if null {
		if !n.nullable {
			return valueErr(ErrNull, "derived from "+strconv.Quote(f.d.Source)+", which is null or missing, and the column is not nullable").field(n.name)
		}
		c.null(n.def-1, 0)
		return nil
	}
	y, mo, d, h, days := civil(us)
	if f.d.Func == FuncDate {
		if n.kind == kDate {
			c.putInt32(int32(days), 0) // |days| < 2^27 for any int64 microseconds
			return nil
		}
		if y < 0 || y > 9999 {
			return valueErr(ErrOutOfRange, "year "+strconv.Itoa(y)+" of the derived date is outside 0000-9999").field(n.name)
		}
		c.data = appendPadded(c.data, y, 4)
		c.data = append(c.data, '-')
		c.data = appendPadded(c.data, mo, 2)
		c.data = append(c.data, '-')
		c.data = appendPadded(c.data, d, 2)
		c.endBytes(0)
		return nil
	}
	v, width := h, 2
	switch f.d.Func {
	case FuncYear:
		v, width = y, 4
	case FuncMonth:
		v = mo
	case FuncDay:
		v = d
	}
	switch n.kind {
	case kString:
		if v < 0 || v > 9999 {
			return valueErr(ErrOutOfRange, "year "+strconv.Itoa(v)+" is outside 0000-9999").field(n.name)
		}
		c.data = appendPadded(c.data, v, width)
		c.endBytes(0)
	case kLong:
		c.putInt64(int64(v), 0)
	default:
		lo, hi := math.MinInt32, math.MaxInt32
		switch n.kind {
		case kShort:
			lo, hi = math.MinInt16, math.MaxInt16
		case kByte:
			lo, hi = math.MinInt8, math.MaxInt8
		}
		if v < lo || v > hi {
			return valueErr(ErrOutOfRange, f.d.Func.String()+" "+strconv.Itoa(v)+" out of range for "+n.typeName()).field(n.name)
		}
		c.putInt32(int32(v), 0)
	}
	return nil
}

func appendPadded(dst []byte, v, width int) []byte {
	for p := 10; width > 1; width-- {
		if v < p {
			dst = append(dst, '0')
		}
		p *= 10
	}
	return strconv.AppendInt(dst, int64(v), 10)
}

// derivedSource returns the source timestamp of f for buffered record
// e.nrec, in microseconds, or null.
func (e *Encoder) derivedSource(f *filler) (us int64, null bool, err *valueError) {
	r := e.nrec
	if s := f.src; s != nil {
		c := e.cols[s.leaf]
		if c.maxDef > 0 && c.defs[r] == 0 {
			return 0, true, nil
		}
		if s.kind == kDate {
			return int64(c.i32[r]) * usPerDay, false, nil
		}
		return c.i64[r], false, nil
	}
	sp := e.dec.caps[f.capture]
	if sp.start < 0 {
		return 0, true, nil
	}
	return e.dec.timestampIn(sp.start, sp.end)
}

// tsNode names the type of a derivation's source in messages.
var tsNode = &node{kind: kTimestamp}

// timestampIn reads the captured JSON value buf[start:end] as a timestamp
// column would take it (a string parsed, an integer as microseconds), and
// a bare date "YYYY-MM-DD" as its midnight UTC.
func (d *decoder) timestampIn(start, end int) (int64, bool, *valueError) {
	v := d.buf[start:end]
	switch c := v[0]; {
	case c == 'n':
		return 0, true, nil
	case c == '"':
		s := v[1 : len(v)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			d.scratch = unescape(d.scratch[:0], s)
			s = d.scratch
		}
		if len(s) == 10 {
			if days, ok := parseDate(s); ok {
				return days * usPerDay, false, nil
			}
		}
		// A derivation reads days or hours: digits beyond the
		// microsecond change nothing it writes.
		us, _, ok := parseTimestamp(s)
		if !ok {
			return 0, false, valueErr(ErrUnparsable, "cannot parse "+quoteValue(s)+" as a timestamp")
		}
		return us, false, nil
	case c == '-' || isDigit(c):
		us, err := d.integer(tsNode, v, math.MinInt64, math.MaxInt64)
		return us, false, err
	default:
		return 0, false, valueErr(ErrTypeMismatch, "expected timestamp, got JSON "+jsonType(c))
	}
}
