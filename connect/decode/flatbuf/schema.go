package flatbuf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/picomq/heavy-sinks/connect/decode/flatbuf/internal/reflection"
	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// object is a table or a struct of the schema, with what the walk needs
// precomputed.
type object struct {
	name     string
	isStruct bool
	size     int     // a struct's byte size
	fields   []field // in declaration order (by id)
}

// field is one field of an object.
type field struct {
	name     string
	key      []byte // `"name":`, JSON-escaped once
	id       uint16 // declaration order
	base     reflection.BaseType
	elem     reflection.BaseType // of a Vector or an Array
	fixedLen int                 // of an Array
	slot     int                 // tables: the vtable offset; structs: the byte offset
	defInt   int64
	defReal  float64
	optional bool // an optional scalar: absent is null
	required bool
	obj      *object // Obj, or a Vector or Array of Obj
	enum     *enum   // an enum-typed scalar or vector; the union of a UType or Union field
	utype    *field  // a Union field's (or vector of unions') _type field
}

// enum is an enum or a union of the schema.
type enum struct {
	name     string
	isUnion  bool
	bitFlags bool
	values   []enumVal // sorted by value
	longest  int       // the longest JSON name
}

type enumVal struct {
	value int64
	name  []byte // the JSON string of the name, quoted
	// A union member: a table, a struct or a string (member == nil,
	// isString).
	member   *object
	isString bool
}

func (e *enum) lookup(v int64) *enumVal {
	i, ok := slices.BinarySearchFunc(e.values, v, func(ev enumVal, v int64) int {
		switch {
		case ev.value < v:
			return -1
		case ev.value > v:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return &e.values[i]
}

// schema is a compiled binary schema.
type schema struct {
	objects []object
	enums   []enum
	root    *object
	// expansion bounds the JSON bytes per payload byte of a record that
	// shares nothing (walk.go's output bound).
	expansion int
	// budget is how many more fields and enum values the file can hold:
	// a damaged file whose objects all share one long field vector would
	// otherwise cost its length squared to load.
	budget int
}

func (s *schema) spend(n int) error {
	if s.budget -= n; n < 0 || s.budget < 0 {
		return errors.New("malformed binary schema: more fields and enum values than the file holds")
	}
	return nil
}

// loadSchema reads a .bfbs file. The generated reflection accessors do not
// check offsets: a malformed schema file panics inside them, and the
// recover turns that into the error. The schema is the operator's file,
// read once at start, not a record; records are read by the checked walk.
func loadSchema(bfbs []byte, rootType string) (s *schema, err error) {
	if len(bfbs) < 8 || !flatbuffers.BufferHasIdentifier(bfbs, "BFBS") {
		return nil, errors.New("not a binary FlatBuffers schema (no BFBS file identifier; write one with flatc --binary --schema)")
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("malformed binary schema: %v", r)
		}
	}()
	rs := reflection.GetRootAsSchema(bfbs, 0)
	// A length read from a damaged file could ask for terabytes: no vector
	// has more elements than the file has 4-byte offsets.
	maxLen := len(bfbs) / 4
	if rs.ObjectsLength() > maxLen || rs.EnumsLength() > maxLen {
		return nil, errors.New("malformed binary schema: a vector longer than the file")
	}
	s = &schema{
		objects: make([]object, rs.ObjectsLength()),
		enums:   make([]enum, rs.EnumsLength()),
		budget:  maxLen,
	}
	var ro reflection.Object
	for i := range s.objects {
		rs.Objects(&ro, i)
		s.objects[i] = object{name: string(ro.Name()), isStruct: ro.IsStruct(), size: int(ro.Bytesize())}
	}
	var re reflection.Enum
	for i := range s.enums {
		rs.Enums(&re, i)
		if err := s.loadEnum(&s.enums[i], &re); err != nil {
			return nil, err
		}
	}
	for i := range s.objects {
		rs.Objects(&ro, i)
		if err := s.loadFields(&s.objects[i], &ro); err != nil {
			return nil, fmt.Errorf("%s: %w", s.objects[i].name, err)
		}
	}
	if err := s.checkStructs(); err != nil {
		return nil, err
	}
	if rootType == "" {
		if rs.RootTable(&ro) == nil {
			return nil, errors.New("the schema declares no root_type: name the root table (flatbuffer_root_type)")
		}
		rootType = string(ro.Name())
	}
	s.root, err = s.findTable(rootType)
	s.expansion = s.maxExpansion()
	return s, err
}

// maxExpansion is the most JSON one payload byte can give without shared
// data, with a margin: 64, or more for a schema whose tables have many
// scalar fields. An empty table costs 8 bytes (its offset and its soffset;
// the vtable can be shared) and writes every scalar's default, which can be
// far more than 64 bytes per 8; strings (6 bytes per control byte) and
// numbers (at most 24 bytes for 1 to 8 bytes) stay under 64.
func (s *schema) maxExpansion() int {
	most := 0
	for i := range s.objects {
		o := &s.objects[i]
		if o.isStruct {
			continue
		}
		n := 2
		for _, f := range o.fields {
			if scalarSize(f.base) > 0 {
				value := 24 // the longest number
				if f.enum != nil {
					value = max(value, f.enum.longest)
				}
				n += len(f.key) + 1 + value
			}
		}
		most = max(most, n)
	}
	return max(64, most/8*2)
}

func (s *schema) findTable(name string) (*object, error) {
	var found []*object
	for i := range s.objects {
		o := &s.objects[i]
		if o.name == name || strings.HasSuffix(o.name, "."+name) {
			found = append(found, o)
		}
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("the schema has no table %q", name)
	case len(found) > 1 && found[0].name != name:
		return nil, fmt.Errorf("%q names several tables: give the full name", name)
	case found[0].isStruct:
		return nil, fmt.Errorf("%q is a struct: the root must be a table", name)
	}
	for _, o := range found {
		if o.name == name {
			return o, nil
		}
	}
	return found[0], nil
}

func (s *schema) loadEnum(e *enum, re *reflection.Enum) error {
	e.name = string(re.Name())
	e.isUnion = re.IsUnion()
	var kv reflection.KeyValue
	for j := 0; j < re.AttributesLength(); j++ {
		re.Attributes(&kv, j)
		if string(kv.Key()) == "bit_flags" {
			e.bitFlags = true
		}
	}
	var ev reflection.EnumVal
	var t reflection.Type
	if err := s.spend(re.ValuesLength()); err != nil {
		return err
	}
	e.values = make([]enumVal, re.ValuesLength())
	for j := range e.values {
		re.Values(&ev, j)
		v := enumVal{value: ev.Value(), name: jsonw.AppendStringLossy(nil, ev.Name())}
		if e.isUnion && v.value != 0 {
			if ev.UnionType(&t) == nil {
				return fmt.Errorf("union %s: member %s has no type", e.name, ev.Name())
			}
			switch t.BaseType() {
			case reflection.BaseTypeObj:
				if t.Index() < 0 || int(t.Index()) >= len(s.objects) {
					return fmt.Errorf("union %s: member %s: object index %d out of range", e.name, ev.Name(), t.Index())
				}
				v.member = &s.objects[t.Index()]
			case reflection.BaseTypeString:
				v.isString = true
			default:
				return fmt.Errorf("union %s: member %s has type %s", e.name, ev.Name(), t.BaseType())
			}
		}
		e.values[j] = v
		e.longest = max(e.longest, len(v.name))
	}
	slices.SortFunc(e.values, func(a, b enumVal) int {
		switch {
		case a.value < b.value:
			return -1
		case a.value > b.value:
			return 1
		}
		return 0
	})
	return nil
}

func (s *schema) loadFields(o *object, ro *reflection.Object) error {
	var rf reflection.Field
	var t reflection.Type
	if err := s.spend(ro.FieldsLength()); err != nil {
		return err
	}
	for j := 0; j < ro.FieldsLength(); j++ {
		ro.Fields(&rf, j)
		if rf.Deprecated() {
			continue
		}
		name := string(rf.Name())
		if rf.Type(&t) == nil {
			return fmt.Errorf("field %s has no type", name)
		}
		f := field{
			name:     name,
			key:      append(jsonw.AppendStringLossy(nil, name), ':'),
			id:       rf.Id(),
			base:     t.BaseType(),
			elem:     t.Element(),
			fixedLen: int(t.FixedLength()),
			slot:     int(rf.Offset()),
			defInt:   rf.DefaultInteger(),
			defReal:  rf.DefaultReal(),
			optional: rf.Optional(),
			required: rf.Required(),
		}
		if rf.Offset64() || f.base == reflection.BaseTypeVector64 {
			return fmt.Errorf("field %s: 64-bit offsets are not supported", name)
		}
		if err := s.resolve(o, &f, t.Index()); err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		o.fields = append(o.fields, f)
	}
	// Reflection lists fields by name; JSON keys follow the declaration.
	slices.SortFunc(o.fields, func(a, b field) int { return int(a.id) - int(b.id) })
	byName := make(map[string]*field, len(o.fields))
	for i := range o.fields {
		byName[o.fields[i].name] = &o.fields[i]
	}
	for i := range o.fields {
		f := &o.fields[i]
		if f.base == reflection.BaseTypeUnion || f.base == reflection.BaseTypeVector && f.elem == reflection.BaseTypeUnion {
			f.utype = byName[f.name+"_type"]
			if f.utype == nil {
				return fmt.Errorf("union field %s has no %s_type field", f.name, f.name)
			}
			// The walk relies on these: a union's members, and a type field
			// of the union's shape (a ubyte, or a vector of them).
			if f.enum == nil || !f.enum.isUnion {
				return fmt.Errorf("union field %s: its type is not a union", f.name)
			}
			wantVector := f.base == reflection.BaseTypeVector
			if u := f.utype; wantVector != (u.base == reflection.BaseTypeVector) ||
				!wantVector && u.base != reflection.BaseTypeUType || wantVector && u.elem != reflection.BaseTypeUType {
				return fmt.Errorf("union field %s: %s is not its type field", f.name, f.utype.name)
			}
		}
	}
	return nil
}

// resolve checks a field's type against the schema and links its object
// or enum.
func (s *schema) resolve(o *object, f *field, index int32) error {
	t := f.base
	if t == reflection.BaseTypeVector || t == reflection.BaseTypeArray {
		t = f.elem
		if t == reflection.BaseTypeVector || t == reflection.BaseTypeArray || t == reflection.BaseTypeVector64 {
			return errors.New("nested vectors are not FlatBuffers")
		}
	}
	if f.base == reflection.BaseTypeArray && (!o.isStruct || f.fixedLen <= 0) {
		return errors.New("a fixed-length array outside a struct")
	}
	switch {
	case t == reflection.BaseTypeObj:
		if index < 0 || int(index) >= len(s.objects) {
			return fmt.Errorf("object index %d out of range", index)
		}
		f.obj = &s.objects[index]
		if o.isStruct && !f.obj.isStruct {
			return errors.New("a table inside a struct")
		}
		if f.obj.isStruct && f.obj.size <= 0 {
			return fmt.Errorf("struct %s has size %d", f.obj.name, f.obj.size)
		}
	case t == reflection.BaseTypeUnion || t == reflection.BaseTypeUType || index >= 0 && scalarSize(t) > 0:
		if index < 0 && (t == reflection.BaseTypeUnion || t == reflection.BaseTypeUType) {
			return errors.New("a union field without its union")
		}
		if index >= 0 {
			if int(index) >= len(s.enums) {
				return fmt.Errorf("enum index %d out of range", index)
			}
			f.enum = &s.enums[index]
		}
	case t == reflection.BaseTypeString:
	case scalarSize(t) > 0:
	default:
		return fmt.Errorf("unsupported type %s", t)
	}
	if o.isStruct && scalarSize(t) == 0 && t != reflection.BaseTypeObj {
		return fmt.Errorf("a %s inside a struct", t)
	}
	return nil
}

// checkStructs checks that each struct's fields lie inside it, which the
// walk relies on (it bounds-checks a struct once, as a whole), and that no
// struct contains itself.
func (s *schema) checkStructs() error {
	for i := range s.objects {
		o := &s.objects[i]
		if !o.isStruct {
			continue
		}
		if o.size <= 0 || o.size > math.MaxUint16*16 {
			return fmt.Errorf("struct %s has size %d", o.name, o.size)
		}
		for _, f := range o.fields {
			if end := f.slot + inlineSize(&f); f.slot < 0 || end > o.size {
				return fmt.Errorf("struct %s: field %s (bytes %d..%d) outside the struct's %d bytes", o.name, f.name, f.slot, end, o.size)
			}
		}
	}
	// A struct holds only smaller structs: strictly decreasing sizes rule
	// out cycles (each field lies inside its struct, checked above).
	structs := make([]*object, 0, len(s.objects))
	for i := range s.objects {
		o := &s.objects[i]
		if !o.isStruct {
			continue
		}
		structs = append(structs, o)
		for _, f := range o.fields {
			if f.obj != nil && f.obj.size >= o.size {
				return fmt.Errorf("struct %s contains struct %s of size %d", o.name, f.obj.name, f.obj.size)
			}
		}
	}
	// And the scalars a struct is written as, nested structs and arrays
	// expanded, are no more than its bytes: fields that overlap (a damaged
	// file: flatc lays them out apart) could otherwise nest into an
	// exponential walk.
	slices.SortFunc(structs, func(a, b *object) int { return a.size - b.size })
	scalars := make(map[*object]int, len(structs))
	for _, o := range structs {
		n := 0
		for _, f := range o.fields {
			each := 1
			if f.obj != nil {
				each = scalars[f.obj]
			}
			if f.base == reflection.BaseTypeArray {
				each *= f.fixedLen
			}
			n += each
			if n > o.size {
				return fmt.Errorf("struct %s: fields that overlap", o.name)
			}
		}
		scalars[o] = n
	}
	return nil
}

// scalarSize is the byte size of a scalar base type, 0 for the others.
func scalarSize(t reflection.BaseType) int {
	switch t {
	case reflection.BaseTypeBool, reflection.BaseTypeByte, reflection.BaseTypeUByte, reflection.BaseTypeUType:
		return 1
	case reflection.BaseTypeShort, reflection.BaseTypeUShort:
		return 2
	case reflection.BaseTypeInt, reflection.BaseTypeUInt, reflection.BaseTypeFloat:
		return 4
	case reflection.BaseTypeLong, reflection.BaseTypeULong, reflection.BaseTypeDouble:
		return 8
	}
	return 0
}

// elemSize is the byte size of one element of type t in a vector or an
// array: a scalar, a struct inline, or a 4-byte offset.
func elemSize(t reflection.BaseType, obj *object) int {
	if n := scalarSize(t); n > 0 {
		return n
	}
	if t == reflection.BaseTypeObj && obj.isStruct {
		return obj.size
	}
	return 4
}

// inlineSize is the bytes a field takes where it sits: in a table's
// inline part, or in a struct.
func inlineSize(f *field) int {
	switch f.base {
	case reflection.BaseTypeArray:
		return f.fixedLen * elemSize(f.elem, f.obj)
	case reflection.BaseTypeObj:
		return elemSize(f.base, f.obj)
	}
	return elemSize(f.base, nil)
}
