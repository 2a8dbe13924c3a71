package flatbuf

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/picomq/heavy-sinks/connect/decode/flatbuf/internal/reflection"
	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// maxDepth bounds the nesting of tables. Offsets point forward, so a
// buffer cannot loop, but it can nest tables as deep as its length allows,
// and the walk's stack with them. Structs need no bound: a struct only
// holds smaller structs (checkStructs).
const maxDepth = 64

// outputFloor and schema.expansion bound one record's JSON, and
// outputMax bounds it whatever the schema: tables and strings may be
// shared (one string referenced by every slot of a vector), so a small
// payload could otherwise expand into an enormous document.
const (
	outputFloor = 1 << 20
	outputMax   = 64 << 20
)

var errTooLarge = errors.New("malformed flatbuffer: decoded JSON exceeds its bound (data referenced too many times)")

// fieldError is an error inside a field, with the path of field names
// from the root table to it.
type fieldError struct {
	path []string // innermost last
	err  error
}

func (e *fieldError) Error() string {
	path := e.path
	if len(path) > 8 {
		path = append([]string{"…"}, path[len(path)-8:]...)
	}
	return "field " + strings.Join(path, ".") + ": " + e.err.Error()
}

func (e *fieldError) Unwrap() error { return e.err }

// inField adds the field name to err's path: the table above it calls it
// with its own field, so the path grows towards the root.
func inField(name string, err error) error {
	var fe *fieldError
	if errors.As(err, &fe) {
		fe.path = append([]string{name}, fe.path...)
		return fe
	}
	return &fieldError{path: []string{name}, err: err}
}

// walker writes the JSON of one buffer.
type walker struct {
	b     buffer
	out   []byte
	limit int // the longest out may grow to
	depth int
}

func (w *walker) grow() error {
	if len(w.out) > w.limit {
		return errTooLarge
	}
	return nil
}

// table writes the table at pos as an object: every field in declaration
// order, scalars always (the default when absent), other fields when set.
func (w *walker) table(o *object, pos int) error {
	// No defer to undo it: an error ends the whole walk.
	if w.depth++; w.depth > maxDepth {
		return fmt.Errorf("malformed flatbuffer: tables nested deeper than %d", maxDepth)
	}
	if err := w.grow(); err != nil {
		return err
	}
	t, err := w.b.table(pos)
	if err != nil {
		return err
	}
	w.out = append(w.out, '{')
	first := true
	for i := range o.fields {
		f := &o.fields[i]
		mark := len(w.out)
		if !first {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, f.key...)
		wrote, err := w.tableField(t, f)
		if err != nil {
			return inField(f.name, err)
		}
		if !wrote {
			w.out = w.out[:mark]
			continue
		}
		first = false
	}
	w.out = append(w.out, '}')
	w.depth--
	return nil
}

// tableField writes the value of f in table t, reporting false when there
// is nothing to write (an absent string, vector, table or union).
func (w *walker) tableField(t table, f *field) (bool, error) {
	switch f.base {
	case reflection.BaseTypeString, reflection.BaseTypeVector, reflection.BaseTypeUnion:
	case reflection.BaseTypeObj:
		if f.obj.isStruct {
			p, err := w.b.field(t, f.slot, f.obj.size)
			if p < 0 || err != nil {
				return false, err
			}
			w.structure(f.obj, p)
			return true, nil
		}
	default:
		p, err := w.b.field(t, f.slot, scalarSize(f.base))
		if err != nil {
			return false, err
		}
		if p < 0 {
			w.scalarDefault(f)
		} else {
			w.scalar(f.base, f.enum, p)
		}
		return true, nil
	}
	p, err := w.b.field(t, f.slot, 4)
	if err != nil {
		return false, err
	}
	if p < 0 {
		if f.required {
			return false, errors.New("required field absent")
		}
		return false, nil
	}
	switch f.base {
	case reflection.BaseTypeString:
		return true, w.str(p)
	case reflection.BaseTypeObj:
		return true, w.table(f.obj, w.b.deref(p))
	case reflection.BaseTypeUnion:
		up, err := w.b.field(t, f.utype.slot, 1)
		if up < 0 || err != nil || w.b[up] == 0 {
			return false, err // NONE: the _type field says so
		}
		return true, w.unionValue(f.enum, int64(w.b[up]), w.b.deref(p))
	}
	if f.elem == reflection.BaseTypeUnion {
		return true, w.unionVector(t, f, p)
	}
	return true, w.vector(f, p)
}

// scalar writes the scalar of type t at pos (checked by the caller): an
// enum's value by its name.
func (w *walker) scalar(t reflection.BaseType, e *enum, pos int) {
	b := w.b
	switch t {
	case reflection.BaseTypeBool:
		w.out = strconv.AppendBool(w.out, b[pos] != 0)
	case reflection.BaseTypeFloat:
		w.out = jsonw.AppendFloat(w.out, float64(math.Float32frombits(b.u32(pos))), 32)
	case reflection.BaseTypeDouble:
		w.out = jsonw.AppendFloat(w.out, math.Float64frombits(b.u64(pos)), 64)
	case reflection.BaseTypeByte:
		w.integer(t, e, int64(int8(b[pos])))
	case reflection.BaseTypeUByte, reflection.BaseTypeUType:
		w.integer(t, e, int64(b[pos]))
	case reflection.BaseTypeShort:
		w.integer(t, e, int64(int16(b.u16(pos))))
	case reflection.BaseTypeUShort:
		w.integer(t, e, int64(b.u16(pos)))
	case reflection.BaseTypeInt:
		w.integer(t, e, int64(int32(b.u32(pos))))
	case reflection.BaseTypeUInt:
		w.integer(t, e, int64(b.u32(pos)))
	case reflection.BaseTypeLong, reflection.BaseTypeULong:
		w.integer(t, e, int64(b.u64(pos)))
	}
}

// scalarDefault writes the schema's default of an absent scalar field;
// null for an optional one (declared `= null`).
func (w *walker) scalarDefault(f *field) {
	switch {
	case f.optional:
		w.out = append(w.out, "null"...)
	case f.base == reflection.BaseTypeBool:
		w.out = strconv.AppendBool(w.out, f.defInt != 0)
	case f.base == reflection.BaseTypeFloat:
		w.out = jsonw.AppendFloat(w.out, float64(float32(f.defReal)), 32)
	case f.base == reflection.BaseTypeDouble:
		w.out = jsonw.AppendFloat(w.out, f.defReal, 64)
	default:
		w.integer(f.base, f.enum, f.defInt)
	}
}

// integer writes v (the bits of a ulong) as a number, or as its enum
// value's name: for bit_flags, the names of its bits, space-separated, as
// flatc writes them. A value the enum does not name stays a number.
func (w *walker) integer(t reflection.BaseType, e *enum, v int64) {
	if e != nil {
		if ev := e.lookup(v); ev != nil {
			w.out = append(w.out, ev.name...)
			return
		}
		if e.bitFlags && w.flags(e, uint64(v)) {
			return
		}
	}
	if t == reflection.BaseTypeULong {
		w.out = strconv.AppendUint(w.out, uint64(v), 10)
	} else {
		w.out = strconv.AppendInt(w.out, v, 10)
	}
}

// flags writes v as the names of its bits, reporting false (writing
// nothing) when a set bit has no name.
func (w *walker) flags(e *enum, v uint64) bool {
	if v == 0 {
		return false
	}
	for rest := v; rest != 0; rest &= rest - 1 {
		if e.lookup(int64(uint64(1)<<bits.TrailingZeros64(rest))) == nil {
			return false
		}
	}
	w.out = append(w.out, '"')
	for rest := v; rest != 0; rest &= rest - 1 {
		name := e.lookup(int64(uint64(1) << bits.TrailingZeros64(rest))).name
		w.out = append(w.out, name[1:len(name)-1]...)
		if rest&(rest-1) != 0 {
			w.out = append(w.out, ' ')
		}
	}
	w.out = append(w.out, '"')
	return true
}

// structure writes the struct at pos, whose o.size bytes the caller
// checked lie in the payload (every field lies inside: checkStructs).
func (w *walker) structure(o *object, pos int) {
	w.out = append(w.out, '{')
	for i := range o.fields {
		f := &o.fields[i]
		if i > 0 {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, f.key...)
		p := pos + f.slot
		switch f.base {
		case reflection.BaseTypeObj:
			w.structure(f.obj, p)
		case reflection.BaseTypeArray:
			size := elemSize(f.elem, f.obj)
			w.out = append(w.out, '[')
			for j := 0; j < f.fixedLen; j++ {
				if j > 0 {
					w.out = append(w.out, ',')
				}
				if f.elem == reflection.BaseTypeObj {
					w.structure(f.obj, p+j*size)
				} else {
					w.scalar(f.elem, f.enum, p+j*size)
				}
			}
			w.out = append(w.out, ']')
		default:
			w.scalar(f.base, f.enum, p)
		}
	}
	w.out = append(w.out, '}')
}

// str writes the string the uoffset at pos points to.
func (w *walker) str(pos int) error { return w.strAt(w.b.deref(pos)) }

// vector writes the vector f the uoffset at pos points to: [ubyte] (bytes,
// nested flatbuffers) as base64, others as an array.
func (w *walker) vector(f *field, pos int) error {
	size := elemSize(f.elem, f.obj)
	start, n, err := w.b.vector(pos, size)
	if err != nil {
		return err
	}
	if f.elem == reflection.BaseTypeUByte && f.enum == nil {
		w.out = jsonw.AppendBase64(w.out, w.b[start:start+n])
		return w.grow()
	}
	w.out = append(w.out, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		p := start + i*size
		switch {
		case f.elem == reflection.BaseTypeString:
			err = w.str(p)
		case f.elem == reflection.BaseTypeObj && f.obj.isStruct:
			w.structure(f.obj, p)
		case f.elem == reflection.BaseTypeObj:
			err = w.table(f.obj, w.b.deref(p))
		default:
			w.scalar(f.elem, f.enum, p)
		}
		if err == nil {
			err = w.grow()
		}
		if err != nil {
			return err
		}
	}
	w.out = append(w.out, ']')
	return nil
}

// unionValue writes the member of union e of type typ at pos: a table or
// a struct as an object, a string as a string.
func (w *walker) unionValue(e *enum, typ int64, pos int) error {
	m := e.lookup(typ)
	if m == nil || typ == 0 {
		return fmt.Errorf("malformed flatbuffer: union %s has no member %d", e.name, typ)
	}
	switch {
	case m.isString:
		return w.strAt(pos)
	case m.member.isStruct:
		if err := w.b.check("struct", pos, m.member.size); err != nil {
			return err
		}
		w.structure(m.member, pos)
		return w.grow()
	}
	return w.table(m.member, pos)
}

// strAt writes the string starting at pos (its length prefix). Bytes that
// are not UTF-8 are an error, not replaced: a replacement would change the
// data.
func (w *walker) strAt(pos int) error {
	if err := w.b.check("string length", pos, 4); err != nil {
		return err
	}
	n := int(w.b.u32(pos))
	if n > len(w.b)-pos-4 {
		return w.b.errRange("string", pos, n)
	}
	out, ok := jsonw.AppendString(w.out, w.b[pos+4:pos+4+n])
	if !ok {
		return errors.New("malformed flatbuffer: a string that is not UTF-8")
	}
	w.out = out
	return w.grow()
}

// unionVector writes a vector of unions: its types are the vector in the
// f_type field, element by element; a NONE element is null.
func (w *walker) unionVector(t table, f *field, pos int) error {
	tp, err := w.b.field(t, f.utype.slot, 4)
	if err != nil {
		return err
	}
	if tp < 0 {
		return fmt.Errorf("malformed flatbuffer: a vector of unions without its %s", f.utype.name)
	}
	types, nt, err := w.b.vector(tp, 1)
	if err != nil {
		return err
	}
	start, n, err := w.b.vector(pos, 4)
	if err != nil {
		return err
	}
	if n != nt {
		return fmt.Errorf("malformed flatbuffer: %d union values but %d types", n, nt)
	}
	w.out = append(w.out, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		if typ := w.b[types+i]; typ == 0 {
			w.out = append(w.out, "null"...)
		} else if err := w.unionValue(f.enum, int64(typ), w.b.deref(start+4*i)); err != nil {
			return err
		}
		if err := w.grow(); err != nil {
			return err
		}
	}
	w.out = append(w.out, ']')
	return nil
}
