package encode

import (
	"strconv"
	"strings"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Top-level fields that name no column. The decoder skips them as the spec
// says, but notes each one (name and where its value lies in the payload);
// when the record is buffered, Add folds them into the batch's list, so a
// caller can count and report silent drops (Unknown) and, with
// Options.InferUnknown, turn them into new columns (NewColumns). A record
// that fails leaves no trace in either.

// UnknownField is a top-level field of the buffered records that names no
// column.
type UnknownField struct {
	Name string
	// Count is the number of buffered records that had the field.
	Count int
	// FirstOffset is the offset of the first of them.
	FirstOffset uint64
}

// unknownRef is one unknown top-level field of the record being decoded:
// its name in decoder.ukeys and its value in the payload.
type unknownRef struct {
	keyStart, keyEnd int
	valStart, valEnd int
}

// unknownField is UnknownField plus, with InferUnknown, the type its
// values give so far and the first reason it cannot become a column.
type unknownField struct {
	UnknownField
	typ *jtype
	err *ColumnError
}

// noteUnknown records a top-level field that names no column; key may be
// scratch space, so it is copied.
func (d *decoder) noteUnknown(key []byte, valStart, valEnd int) {
	ks := len(d.ukeys)
	d.ukeys = append(d.ukeys, key...)
	d.unknown = append(d.unknown, unknownRef{keyStart: ks, keyEnd: len(d.ukeys), valStart: valStart, valEnd: valEnd})
}

// keepUnknown folds the unknown fields of the record Add just buffered
// into the batch's list.
func (e *Encoder) keepUnknown(offset uint64) {
	d := &e.dec
	for _, u := range d.unknown {
		name := d.ukeys[u.keyStart:u.keyEnd]
		i, ok := e.unknownIdx[string(name)]
		if !ok {
			i = len(e.unknown)
			e.unknown = append(e.unknown, unknownField{UnknownField: UnknownField{Name: string(name), FirstOffset: offset}})
			e.unknownIdx[e.unknown[i].Name] = i
		}
		f := &e.unknown[i]
		f.Count++
		if e.opts.InferUnknown && f.err == nil {
			in := inferrer{buf: d.buf[u.valStart:u.valEnd], offset: offset}
			if err := in.merge(&f.typ, f.Name); err != nil {
				f.err = err
			}
		}
	}
}

// Unknown returns the top-level fields of the records buffered since the
// last Flush or Reset that name no column, in the order first seen.
func (e *Encoder) Unknown() []UnknownField {
	out := make([]UnknownField, len(e.unknown))
	for i, f := range e.unknown {
		out[i] = f.UnknownField
	}
	return out
}

// NewColumns returns, with Options.InferUnknown, the columns the unknown
// top-level fields of the buffered records call for, in the order first
// seen: nullable, typed from the values (a JSON integer is a long, any
// other number a double, and a field with both is a double; a string is a
// string, true/false a boolean, an object a struct of its fields' types,
// an array an array of its elements' type). A field whose every value was
// null is left out: a null carries no data, so the column waits for a
// batch that types it. Any other field whose type the batch does not decide
// (values of two types, an empty array or object, a nested field that is
// only null, an integer beyond a long) is a *ColumnError: a guess could
// fix a wrong type in the table for good.
//
// Names follow the rules Spark applies to tables without column mapping,
// so every engine can read the table afterwards: a name must not be empty
// nor contain any of ` ,;{}()\n\t=`, and must not differ only in case from
// a column or a sibling field (Delta column names are case-insensitive).
func (e *Encoder) NewColumns() ([]deltalog.StructField, error) { return e.NewColumnsFrom(nil) }

// NewColumnsFrom is NewColumns, except that a field hint has (a top-level
// field of the same name) takes hint's type instead of the one its values
// give, also when its values were only null or did not decide a type: the
// type comes from the schema the records were written with (column_types
// = "value_schema"). Values that do not fit it are record errors when the
// batch is encoded against the new schema, as for any column.
func (e *Encoder) NewColumnsFrom(hint *deltalog.StructType) ([]deltalog.StructField, error) {
	var out []deltalog.StructField
	names := map[string]string{}
	for _, f := range e.root.fields {
		names[strings.ToLower(f.name)] = f.name
	}
	for _, f := range e.unknown {
		if hint != nil {
			if h := hint.Field(f.Name); h != nil {
				if err := checkName(names, f.Name, f.Name, f.FirstOffset); err != nil {
					return nil, err
				}
				out = append(out, deltalog.StructField{Name: f.Name, Type: h.Type, Nullable: true})
				continue
			}
		}
		if f.err != nil {
			return nil, f.err
		}
		if f.typ == nil { // only nulls
			continue
		}
		if err := checkName(names, f.Name, f.Name, f.FirstOffset); err != nil {
			return nil, err
		}
		t, err := f.typ.dataType(f.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, deltalog.StructField{Name: f.Name, Type: t, Nullable: true})
	}
	return out, nil
}

func (e *Encoder) resetUnknown() {
	e.unknown = e.unknown[:0]
	clear(e.unknownIdx)
}

// ColumnError reports an unknown field of the batch that cannot become a
// column: its type is not decided by the batch's values.
type ColumnError struct {
	// Field is the path of the value in question: the top-level field,
	// then struct fields joined by dots, "[]" for array elements.
	Field string
	// Detail says why, naming the offsets of the records involved.
	Detail string
}

func (e *ColumnError) Error() string {
	return "field " + strconv.Quote(e.Field) + " cannot become a column: " + e.Detail
}

// jkind is a JSON value's kind as inference sees it.
type jkind uint8

const (
	jLong jkind = iota + 1
	jDouble
	jString
	jBool
	jStruct
	jArray
)

func (k jkind) String() string {
	return [...]string{"", "long", "double", "string", "boolean", "struct", "array"}[k]
}

// jtype is the type the values of one field give so far. A nil *jtype is
// a field seen only as null (or not at all).
type jtype struct {
	kind jkind
	at   uint64 // offset of the record that first gave this kind
	// fields: a struct's, in first-seen order.
	fields []jfield
	// elem: an array's element type, nil while no element had one.
	elem *jtype
}

type jfield struct {
	name string
	typ  *jtype
}

// dataType turns an inferred type into a Delta type; path names it in
// errors.
func (t *jtype) dataType(path string) (deltalog.DataType, error) {
	switch t.kind {
	case jLong:
		return deltalog.TypeLong, nil
	case jDouble:
		return deltalog.TypeDouble, nil
	case jString:
		return deltalog.TypeString, nil
	case jBool:
		return deltalog.TypeBoolean, nil
	case jArray:
		if t.elem == nil {
			return nil, &ColumnError{Field: path, Detail: "its arrays are empty or hold only nulls in this batch (first at offset " +
				strconv.FormatUint(t.at, 10) + "), so the element type is unknown"}
		}
		et, err := t.elem.dataType(path + "[]")
		if err != nil {
			return nil, err
		}
		return &deltalog.ArrayType{ElementType: et, ContainsNull: true}, nil
	}
	// jStruct
	if len(t.fields) == 0 {
		return nil, &ColumnError{Field: path, Detail: "its objects are empty in this batch (first at offset " +
			strconv.FormatUint(t.at, 10) + "), and a struct needs a field"}
	}
	st := &deltalog.StructType{Fields: make([]deltalog.StructField, 0, len(t.fields))}
	names := map[string]string{}
	for _, f := range t.fields {
		p := path + "." + f.name
		if err := checkName(names, f.name, p, t.at); err != nil {
			return nil, err
		}
		if f.typ == nil {
			return nil, &ColumnError{Field: p, Detail: "it is only null in this batch (its struct first at offset " +
				strconv.FormatUint(t.at, 10) + "), so its type is unknown"}
		}
		ft, err := f.typ.dataType(p)
		if err != nil {
			return nil, err
		}
		st.Fields = append(st.Fields, deltalog.StructField{Name: f.name, Type: ft, Nullable: true})
	}
	return st, nil
}

// checkName refuses a field name that Spark would not take as a column
// name in a table without column mapping, or that differs only in case
// from one in names (the other fields at its level), which it joins.
func checkName(names map[string]string, name, path string, offset uint64) *ColumnError {
	at := " (first at offset " + strconv.FormatUint(offset, 10) + ")"
	if name == "" || strings.ContainsAny(name, " ,;{}()\n\t=") {
		return &ColumnError{Field: path, Detail: "a column name must not be empty nor contain any of \" ,;{}()\\n\\t=\"" + at}
	}
	low := strings.ToLower(name)
	if other, ok := names[low]; ok {
		return &ColumnError{Field: path, Detail: "the name differs only in case from " + strconv.Quote(other) +
			", and Delta column names are case-insensitive" + at}
	}
	names[low] = name
	return nil
}

// inferrer reads one validated JSON value and merges its type into a
// jtype.
type inferrer struct {
	d      decoder
	buf    []byte
	offset uint64
}

// merge folds the value in buf into *t.
func (in *inferrer) merge(t **jtype, path string) *ColumnError {
	in.d.buf, in.d.pos = in.buf, 0
	return in.value(t, path)
}

func (in *inferrer) value(t **jtype, path string) *ColumnError {
	d := &in.d
	d.skipWS()
	var kind jkind
	switch c := d.buf[d.pos]; {
	case c == 'n':
		d.pos += len("null")
		return nil
	case c == 't':
		d.pos += len("true")
		kind = jBool
	case c == 'f':
		d.pos += len("false")
		kind = jBool
	case c == '"':
		d.scanString() // validated by the decoder
		kind = jString
	case c == '{':
		kind = jStruct
	case c == '[':
		kind = jArray
	default:
		start, end, _ := d.scanNumber()
		kind = jDouble
		if isIntegerToken(d.buf[start:end]) {
			if _, err := strconv.ParseInt(bstr(d.buf[start:end]), 10, 64); err != nil {
				return &ColumnError{Field: path, Detail: "value " + truncateForMessage(string(d.buf[start:end])) +
					" at offset " + strconv.FormatUint(in.offset, 10) + " is an integer beyond the range of a long; add the column by hand (a decimal(38,0) holds it)"}
			}
			kind = jLong
		}
	}
	if *t == nil {
		*t = &jtype{kind: kind, at: in.offset}
	}
	cur := *t
	switch {
	case cur.kind == kind:
	case cur.kind == jLong && kind == jDouble:
		// Integers and fractions in one field: a double holds both (an
		// integer beyond 2^53 loses precision, as in every JSON reader).
		cur.kind, cur.at = jDouble, in.offset
	case cur.kind == jDouble && kind == jLong:
	default:
		return &ColumnError{Field: path, Detail: "its values have two types in this batch: " + cur.kind.String() + " at offset " +
			strconv.FormatUint(cur.at, 10) + ", " + kind.String() + " at offset " + strconv.FormatUint(in.offset, 10) +
			"; add the column by hand with the type it should have"}
	}
	switch kind {
	case jStruct:
		return in.object(cur, path)
	case jArray:
		return in.array(cur, path)
	}
	return nil
}

func (in *inferrer) object(t *jtype, path string) *ColumnError {
	d := &in.d
	d.pos++ // '{'
	d.skipWS()
	if d.buf[d.pos] == '}' {
		d.pos++
		return nil
	}
	for {
		d.skipWS()
		start, end, esc, _ := d.scanString()
		key := d.buf[start:end]
		if esc {
			key = unescape(nil, key)
		}
		_ = d.colon()
		i := -1
		for j := range t.fields {
			if t.fields[j].name == string(key) {
				i = j
				break
			}
		}
		if i < 0 {
			i = len(t.fields)
			t.fields = append(t.fields, jfield{name: string(key)})
		}
		if err := in.value(&t.fields[i].typ, path+"."+t.fields[i].name); err != nil {
			return err
		}
		if more, _ := d.next('}', ""); !more {
			return nil
		}
	}
}

func (in *inferrer) array(t *jtype, path string) *ColumnError {
	d := &in.d
	d.pos++ // '['
	d.skipWS()
	if d.buf[d.pos] == ']' {
		d.pos++
		return nil
	}
	path += "[]"
	for {
		if err := in.value(&t.elem, path); err != nil {
			return err
		}
		if more, _ := d.next(']', ""); !more {
			return nil
		}
	}
}

// isIntegerToken reports whether a JSON number is written without fraction
// or exponent.
func isIntegerToken(tok []byte) bool {
	for _, c := range tok {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}
