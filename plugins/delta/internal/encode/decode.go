package encode

import (
	"bytes"
	"encoding/base64"
	"math"
	"strconv"
	"unsafe"
)

// decoder walks one record payload against the schema and appends its
// values straight into the column buffers. Nothing is materialized in
// between: no map[string]any, no per-value allocation.
type decoder struct {
	buf   []byte
	pos   int
	depth int
	cols  []*column
	nrec  int // records buffered before this one
	// matched is set when a top-level key names a column: a record with
	// none is most likely meant for another table, or spelled differently
	// (names match case-sensitively).
	matched bool
	// unknown lists the record's top-level fields that name no column;
	// ukeys holds their names (unknown.go).
	unknown []unknownRef
	ukeys   []byte

	num     decNum
	scratch []byte   // unescaped keys and strings that are parsed, not stored
	seen    []uint64 // stack of per-struct-instance "field seen" bitsets
	marks   []int    // stack of leaf slot counts at struct-instance start

	// caps keeps the JSON values of top-level fields derivations read
	// (fill.go): a column's by node.capture, a field the table lacks by
	// capNames. start < 0: not in this record.
	caps     []span
	capNames map[string]int
	// cuts lists, per timestamp value of the record that lost digits
	// beyond the microsecond, its column (the index into cols).
	cuts []int
	// metaNames: the pico_* names are the record's metadata, never a
	// payload field to list as unknown (Options.Metadata), so add_columns
	// cannot type a metadata column from what a producer sent.
	metaNames bool
}

// span is a byte range of the payload.
type span struct{ start, end int }

func (d *decoder) reset(payload []byte, nrec int) {
	d.buf, d.pos, d.depth, d.nrec = payload, 0, 0, nrec
	d.matched = false
	d.unknown, d.ukeys = d.unknown[:0], d.ukeys[:0]
	d.cuts = d.cuts[:0]
	d.seen = d.seen[:0]
	d.marks = d.marks[:0]
	for i := range d.caps {
		d.caps[i].start = -1
	}
}

// record decodes a whole payload, which must be one JSON object.
func (d *decoder) record(root *node) *valueError {
	d.skipWS()
	if d.pos >= len(d.buf) {
		return syntaxErr(d.pos, "empty payload")
	}
	if c := d.buf[d.pos]; c != '{' {
		if t := jsonType(c); t != "invalid JSON" {
			if err := d.skipValue(); err != nil {
				return err
			}
			return &valueError{kind: ErrNotObject, detail: "payload is a JSON " + t + ", not an object"}
		}
		return syntaxErr(d.pos, "invalid character "+quoteChar(c)+" looking for a value")
	}
	if err := d.object(root, 0); err != nil {
		if err.kind != ErrInvalidJSON {
			// The decoder stops at the first problem; if the payload is
			// not even JSON, say that instead, it is the more basic one.
			d.pos, d.depth = 0, 0
			if serr := d.skipValue(); serr != nil {
				return serr
			}
			if d.skipWS(); d.pos != len(d.buf) {
				return syntaxErr(d.pos, "unexpected data after the top-level object")
			}
		}
		return err
	}
	d.skipWS()
	if d.pos != len(d.buf) {
		return syntaxErr(d.pos, "unexpected data after the top-level object")
	}
	return nil
}

// value decodes one JSON value into node n. rep is the repetition level of
// the first slot this value writes to each of its leaves.
func (d *decoder) value(n *node, rep uint8) *valueError {
	d.skipWS()
	if d.pos >= len(d.buf) {
		return syntaxErr(d.pos, "unexpected end of input")
	}
	c := d.buf[d.pos]
	if c == 'n' {
		if err := d.literal("null"); err != nil {
			return err
		}
		if !n.nullable {
			return valueErr(ErrNull, "null in non-nullable field")
		}
		d.null(n, rep)
		return nil
	}
	switch n.kind {
	case kStruct:
		if c != '{' {
			return d.mismatch(n, c)
		}
		return d.object(n, rep)
	case kArray:
		if c != '[' {
			return d.mismatch(n, c)
		}
		return d.array(n, rep)
	case kMap:
		if c != '{' {
			return d.mismatch(n, c)
		}
		return d.mapValue(n, rep)
	case kString:
		col := d.cols[n.leaf]
		if c == '"' {
			start, end, esc, err := d.scanString()
			if err != nil {
				return err
			}
			if esc {
				col.data = unescape(col.data, d.buf[start:end])
			} else {
				col.data = append(col.data, d.buf[start:end]...)
			}
		} else {
			// Coercion: any other JSON value is stored as its JSON text.
			start := d.pos
			if err := d.skipValue(); err != nil {
				return err
			}
			col.data = appendCompact(col.data, d.buf[start:d.pos])
		}
		col.endBytes(rep)
		return nil
	case kBool:
		col := d.cols[n.leaf]
		switch c {
		case 't':
			if err := d.literal("true"); err != nil {
				return err
			}
			col.putBool(true, rep)
		case 'f':
			if err := d.literal("false"); err != nil {
				return err
			}
			col.putBool(false, rep)
		default:
			return d.mismatch(n, c)
		}
		return nil
	}
	if c == '"' {
		start, end, esc, err := d.scanString()
		if err != nil {
			return err
		}
		s := d.buf[start:end]
		if esc {
			d.scratch = unescape(d.scratch[:0], s)
			s = d.scratch
		}
		return d.fromString(n, s, rep, false)
	}
	if c == '-' || isDigit(c) {
		start, end, err := d.scanNumber()
		if err != nil {
			return err
		}
		return d.number(n, d.buf[start:end], rep)
	}
	if c == 't' || c == 'f' || c == '{' || c == '[' {
		return d.mismatch(n, c)
	}
	return syntaxErr(d.pos, "invalid character "+quoteChar(c)+" looking for a value")
}

// mismatch reports a JSON value whose type the column cannot take. The value
// is skipped first so a syntax error inside it wins (it is the more basic
// problem).
func (d *decoder) mismatch(n *node, c byte) *valueError {
	if err := d.skipValue(); err != nil {
		return err
	}
	return valueErr(ErrTypeMismatch, "expected "+n.typeName()+", got JSON "+jsonType(c))
}

// null writes a null for n (which must be nullable) to every leaf under it.
func (d *decoder) null(n *node, rep uint8) {
	def := n.def - 1
	for _, l := range n.leaves {
		d.cols[l].null(def, rep)
	}
}

// object decodes a JSON object into struct node n. Fields the schema lacks
// are skipped; missing fields are written as nulls; for a key that appears
// twice the last occurrence wins.
func (d *decoder) object(n *node, rep uint8) *valueError {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '{'
	// Which fields this instance has seen: a local word for up to 64
	// fields, a slice on the decoder's stack beyond. Filled columns count
	// as seen: they get no null.
	seen0 := n.filledMask
	seen := len(d.seen)
	if len(n.fields) > 64 {
		for range (len(n.fields) + 63) / 64 {
			d.seen = append(d.seen, 0)
		}
	}
	// Inside arrays and maps a struct's leaves already hold earlier
	// elements' slots, so rolling back a duplicate key needs the counts at
	// this instance's start. Outside them a leaf's slots start at the
	// record's first slot, which the decoder knows without a mark.
	marks := -1
	if n.repDepth > 0 {
		marks = len(d.marks)
		for _, l := range n.leaves {
			d.marks = append(d.marks, d.cols[l].slots())
		}
	}
	d.skipWS()
	if d.pos < len(d.buf) && d.buf[d.pos] == '}' {
		d.pos++
	} else {
		hint := 0
		for {
			d.skipWS()
			if d.pos >= len(d.buf) || d.buf[d.pos] != '"' {
				return d.expected("string for object key")
			}
			// capture >= 0: the field feeds a derivation; used: a filled
			// column's field or a captured one, neither listed as unknown.
			idx, capture, used := -1, -1, false
			var key []byte
			// Producers usually send keys in schema order: try the field
			// after the last match first, comparing the raw bytes, which
			// also skips scanning the key.
			if hint < len(n.fields) {
				if f := n.fields[hint]; f.plainName {
					if e := d.pos + 1 + len(f.name); e < len(d.buf) && d.buf[e] == '"' && string(d.buf[d.pos+1:e]) == f.name {
						idx = hint
						d.pos = e + 1
					}
				}
			}
			if idx < 0 {
				start, end, esc, err := d.scanString()
				if err != nil {
					return err
				}
				key = d.buf[start:end]
				if esc {
					d.scratch = unescape(d.scratch[:0], key)
					key = d.scratch
				}
				// A filled column's payload field is read like one the
				// table lacks (fill.go).
				if i, ok := n.byName[string(key)]; ok && !n.fields[i].filled {
					idx = i
				} else if ok {
					used = true
				} else if d.capNames != nil && d.depth == 1 {
					if i, ok := d.capNames[string(key)]; ok {
						capture, used = i, true
					}
				}
				if d.metaNames && d.depth == 1 && !used && idx < 0 && isMetaName(key) {
					used = true
				}
			}
			// colon and next, with their fast paths inlined by hand: this
			// loop runs once per field of every record.
			if d.pos < len(d.buf) && d.buf[d.pos] == ':' {
				d.pos++
			} else if err := d.colonSlow(); err != nil {
				return err
			}
			if idx < 0 {
				if capture >= 0 {
					d.skipWS()
				}
				start := d.pos
				if err := d.skipValue(); err != nil {
					return err
				}
				if capture >= 0 {
					d.caps[capture] = span{start, d.pos}
				}
				if d.depth == 1 && !used {
					d.noteUnknown(key, start, d.pos)
				}
			} else {
				f := n.fields[idx]
				word := &seen0
				if len(n.fields) > 64 {
					word = &d.seen[seen+idx/64]
				}
				bit := uint64(1) << (idx % 64)
				if *word&bit != 0 {
					d.rollbackField(n, idx, marks)
				}
				*word |= bit
				if f.capture > 0 {
					d.skipWS()
				}
				start := d.pos
				if err := d.value(f, rep); err != nil {
					return err.field(f.name)
				}
				if f.capture > 0 {
					d.caps[f.capture-1] = span{start, d.pos}
				}
				hint = idx + 1
				if d.depth == 1 {
					d.matched = true
				}
			}
			if d.pos < len(d.buf) && d.buf[d.pos] == ',' {
				d.pos++
				continue
			}
			more, err := d.nextSlow('}', "object member")
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	all := len(n.fields) <= 64 && seen0 == 1<<len(n.fields)-1
	for i, f := range n.fields {
		if all {
			break
		}
		word := seen0
		if len(n.fields) > 64 {
			word = d.seen[seen+i/64]
		}
		if word&(1<<(i%64)) != 0 || f.filled {
			continue
		}
		if !f.nullable {
			return valueErr(ErrNull, "missing non-nullable field").field(f.name)
		}
		d.null(f, rep)
	}
	d.seen = d.seen[:seen]
	if marks >= 0 {
		d.marks = d.marks[:marks]
	}
	d.depth--
	return nil
}

// rollbackField drops the slots a first occurrence of field idx wrote, so
// a repeated key replaces it.
func (d *decoder) rollbackField(n *node, idx, marks int) {
	f := n.fields[idx]
	off := 0
	if marks >= 0 {
		for _, g := range n.fields[:idx] {
			off += len(g.leaves)
		}
	}
	for j, l := range f.leaves {
		c := d.cols[l]
		switch {
		case marks >= 0:
			c.truncate(d.marks[marks+off+j])
		case c.maxRep == 0:
			c.truncate(d.nrec)
		default:
			c.truncate(int(c.recStart[len(c.recStart)-1]))
		}
	}
}

func (d *decoder) array(n *node, rep uint8) *valueError {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '['
	d.skipWS()
	if d.pos < len(d.buf) && d.buf[d.pos] == ']' {
		d.pos++
		for _, l := range n.leaves {
			d.cols[l].null(n.def, rep) // present but empty
		}
		d.depth--
		return nil
	}
	for i := 0; ; i++ {
		r := rep
		if i > 0 {
			r = n.elem.repDepth
		}
		if err := d.value(n.elem, r); err != nil {
			return err.index(i)
		}
		more, err := d.next(']', "array element")
		if err != nil {
			return err.index(i)
		}
		if !more {
			break
		}
	}
	d.depth--
	return nil
}

// mapValue decodes a JSON object into map node n: one entry per member, in
// order. Duplicate keys are kept as separate entries (see doc.go).
func (d *decoder) mapValue(n *node, rep uint8) *valueError {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '{'
	d.skipWS()
	if d.pos < len(d.buf) && d.buf[d.pos] == '}' {
		d.pos++
		for _, l := range n.leaves {
			d.cols[l].null(n.def, rep)
		}
		d.depth--
		return nil
	}
	for i := 0; ; i++ {
		r := rep
		if i > 0 {
			r = n.key.repDepth
		}
		d.skipWS()
		if d.pos >= len(d.buf) || d.buf[d.pos] != '"' {
			return d.expected("string for object key")
		}
		start, end, esc, err := d.scanString()
		if err != nil {
			return err
		}
		key := d.buf[start:end]
		if esc {
			d.scratch = unescape(d.scratch[:0], key)
			key = d.scratch
		}
		if n.key.kind == kString {
			col := d.cols[n.key.leaf]
			col.data = append(col.data, key...)
			col.endBytes(r)
		} else if err := d.fromString(n.key, key, r, true); err != nil {
			return err.mapKey(string(key))
		}
		keyStr := d.buf[start:end] // for error paths only; escapes left as sent
		if err := d.colon(); err != nil {
			return err
		}
		if err := d.value(n.val, r); err != nil {
			return err.mapKey(string(keyStr))
		}
		more, err := d.next('}', "object member")
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	d.depth--
	return nil
}

// bstr views b as a string without copying; only for calls that do not
// keep the string (strconv parsers clone what they put in errors).
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// number stores a JSON number token in a non-string primitive column.
func (d *decoder) number(n *node, tok []byte, rep uint8) *valueError {
	col := d.cols[n.leaf]
	switch n.kind {
	case kLong, kTimestamp, kTimestampNTZ:
		// Timestamps: an integer passes through as microseconds.
		v, err := d.integer(n, tok, math.MinInt64, math.MaxInt64)
		if err != nil {
			return err
		}
		col.putInt64(v, rep)
	case kInt, kShort, kByte, kDate:
		// int32 columns of different ranges; an integer date is days since
		// the epoch.
		lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
		switch n.kind {
		case kShort:
			lo, hi = math.MinInt16, math.MaxInt16
		case kByte:
			lo, hi = math.MinInt8, math.MaxInt8
		}
		v, err := d.integer(n, tok, lo, hi)
		if err != nil {
			return err
		}
		col.putInt32(int32(v), rep)
	case kDouble:
		if f, ok := parseSimpleFloat(tok); ok {
			col.putDouble(f, rep)
			return nil
		}
		f, err := strconv.ParseFloat(bstr(tok), 64)
		if err != nil {
			return valueErr(ErrOutOfRange, "value "+truncateForMessage(string(tok))+" out of range for double")
		}
		col.putDouble(f, rep)
	case kFloat:
		f, err := strconv.ParseFloat(bstr(tok), 32)
		if err != nil {
			return valueErr(ErrOutOfRange, "value "+truncateForMessage(string(tok))+" out of range for float")
		}
		col.putFloat(float32(f), rep)
	case kDecimal:
		d.num.parseDecimal(tok) // a JSON number always parses
		return d.decimal(n, tok, false, rep)
	case kBinary:
		return valueErr(ErrTypeMismatch, "expected binary, got JSON number")
	default:
		panic("encode: number into " + n.kind.String())
	}
	return nil
}

// integer converts a JSON number token for an integral column: integral
// values written with a fraction or exponent (1.0, 1e3) are accepted,
// fractional ones are a type mismatch, and the range is checked.
func (d *decoder) integer(n *node, tok []byte, lo, hi int64) (int64, *valueError) {
	v, ok := parseSmallInt(tok)
	if !ok {
		d.num.parseDecimal(tok)
		var frac, oor bool
		v, frac, oor = d.num.toInt64(lo, hi)
		switch {
		case frac:
			return 0, valueErr(ErrTypeMismatch, "expected "+n.typeName()+", got fractional number "+truncateForMessage(string(tok)))
		case oor:
			return 0, valueErr(ErrOutOfRange, "value "+truncateForMessage(string(tok))+" out of range for "+n.typeName())
		}
		return v, nil
	}
	if v < lo || v > hi {
		return 0, valueErr(ErrOutOfRange, "value "+string(tok)+" out of range for "+n.typeName())
	}
	return v, nil
}

// decimal stores d.num (already parsed) in decimal column n. raw is the
// value as sent (a JSON string's content when quoted), for messages.
func (d *decoder) decimal(n *node, raw []byte, quoted bool, rep uint8) *valueError {
	hi, lo, nd, inexact := d.num.unscaled(n.scale)
	if nd > n.precision || inexact {
		shown := truncateForMessage(string(raw))
		if quoted {
			shown = quoteValue(raw)
		}
		if nd > n.precision {
			// Too many integer digits, whatever the fraction.
			return valueErr(ErrOutOfRange, "value "+shown+" does not fit "+n.typeName())
		}
		// Never rounded: a money column must not change silently.
		what := "has more than " + strconv.Itoa(n.scale) + " fractional digits"
		if n.scale == 0 {
			what = "is not an integer"
		}
		return valueErr(ErrInexact, "value "+shown+" "+what+" and would be rounded to fit "+n.typeName())
	}
	col := d.cols[n.leaf]
	neg := d.num.neg
	switch col.phys {
	case physInt32:
		v := int32(lo)
		if neg {
			v = -v
		}
		col.putInt32(v, rep)
	case physInt64:
		v := int64(lo)
		if neg {
			v = -v
		}
		col.putInt64(v, rep)
	default:
		col.putFixed(hi, lo, neg, rep)
	}
	return nil
}

// fromString stores a JSON string in a non-string primitive column: the
// documented coercions (timestamps, dates, decimals, base64 binary). Other
// columns take no strings, except map keys (key=true), which are always
// strings in JSON and are parsed as the key type.
func (d *decoder) fromString(n *node, s []byte, rep uint8, key bool) *valueError {
	col := d.cols[n.leaf]
	switch n.kind {
	case kString:
		col.data = append(col.data, s...)
		col.endBytes(rep)
	case kTimestamp, kTimestampNTZ:
		v, cut, ok := parseTimestamp(s)
		if !ok {
			return valueErr(ErrUnparsable, "cannot parse "+quoteValue(s)+" as a timestamp")
		}
		if cut {
			d.cuts = append(d.cuts, n.leaf)
		}
		col.putInt64(v, rep)
	case kDate:
		v, ok := int64(0), len(s) == 10
		if ok {
			v, ok = parseDate(s)
		}
		if !ok {
			return valueErr(ErrUnparsable, "cannot parse "+quoteValue(s)+" as a date")
		}
		col.putInt32(int32(v), rep)
	case kDecimal:
		if !d.num.parseDecimal(s) {
			return valueErr(ErrUnparsable, "cannot parse "+quoteValue(s)+" as "+n.typeName())
		}
		return d.decimal(n, s, true, rep)
	case kBinary:
		enc := base64.StdEncoding
		url := bytes.ContainsAny(s, "-_")
		switch {
		case url && len(s)%4 != 0:
			enc = base64.RawURLEncoding
		case url:
			enc = base64.URLEncoding
		case len(s)%4 != 0:
			enc = base64.RawStdEncoding
		}
		before := len(col.data)
		var err error
		col.data, err = enc.AppendDecode(col.data, s)
		if err != nil {
			col.data = col.data[:before]
			return valueErr(ErrUnparsable, "cannot decode "+quoteValue(s)+" as base64")
		}
		col.endBytes(rep)
	case kDouble, kFloat:
		// JSON has no literal for NaN and the infinities; these strings are
		// how Spark, Jackson and delta-rs spell them.
		f, ok := nonFinite(s)
		switch {
		case ok && n.kind == kDouble:
			col.putDouble(f, rep)
		case ok:
			col.putFloat(float32(f), rep)
		case key:
			return d.keyFromString(n, s, rep)
		default:
			return valueErr(ErrTypeMismatch, "expected "+n.typeName()+", got JSON string (only \"NaN\", \"Infinity\" and \"-Infinity\" are read from strings)")
		}
	default:
		if !key {
			return valueErr(ErrTypeMismatch, "expected "+n.typeName()+", got JSON string")
		}
		return d.keyFromString(n, s, rep)
	}
	return nil
}

// nonFinite reads the three non-finite float spellings, exactly.
func nonFinite(s []byte) (float64, bool) {
	switch string(s) {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}

// keyFromString parses a map key for boolean and numeric key types.
func (d *decoder) keyFromString(n *node, s []byte, rep uint8) *valueError {
	if n.kind == kBool {
		switch string(s) {
		case "true":
			d.cols[n.leaf].putBool(true, rep)
		case "false":
			d.cols[n.leaf].putBool(false, rep)
		default:
			return valueErr(ErrUnparsable, "cannot parse "+quoteValue(s)+" as boolean")
		}
		return nil
	}
	// The key must look like a JSON number; then it is stored exactly as a
	// number value would be.
	save, saveBuf := d.pos, d.buf
	d.buf, d.pos = s, 0
	_, end, err := d.scanNumber()
	ok := err == nil && end == len(s)
	d.buf, d.pos = saveBuf, save
	if !ok {
		return valueErr(ErrUnparsable, "cannot parse "+quoteValue(s)+" as "+n.typeName())
	}
	// s may be d.scratch, which number does not touch.
	return d.number(n, s, rep)
}
