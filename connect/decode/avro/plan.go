package avro

import (
	"fmt"

	hamba "github.com/hamba/avro/v2"
)

// kind is what a node reads and writes.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt
	kLong
	kFloat
	kDouble
	kBytes
	kString
	kFixed
	kEnum
	kArray
	kMap
	kRecord
	kUnion
	kWrap // a value in a reader union's {"<type name>": value}: no index on the wire
	kDecimalBytes
	kDecimalFixed
	kDate
	kTimeMillis
	kTimeMicros
	kTimestampMillis
	kTimestampMicros
	kLocalTimestampMillis
	kLocalTimestampMicros
	kDuration
)

// node is one schema position, compiled. A tree of nodes is immutable once
// built and shared by every goroutine decoding with the codec.
type node struct {
	kind kind
	// wire is how the writer encoded a float or double node: kLong for an
	// int or long promoted by resolution, kFloat for a promoted float.
	wire    kind
	size    int      // fixed, decimal fixed, duration: bytes
	scale   int      // decimal
	prec    int      // decimal: its precision (the JSON does not use it; ValueSchema does)
	symbols [][]byte // enum: the JSON string per writer index; nil: no symbol
	elem    *node    // array items, map values
	fields  []field  // record, in the writer's (the wire's) order
	// order, when not nil, is the output order of a record whose reader
	// lists its fields in another order than the wire: indexes into fields.
	order    []int
	branches []branch // union, per writer index
	// zeroSize: the node's datum takes no bytes (null, an empty record):
	// an array of them is bounded by count, not by the payload's length.
	zeroSize bool
}

type field struct {
	name string
	key  []byte // `"name":`
	node *node
	// skip: a writer field the reader does not have; read, not written.
	skip bool
	// def, when not nil, is the JSON of a reader field the writer lacks:
	// nothing is read.
	def []byte
}

type branch struct {
	node *node
	open []byte // `{"name":` around the value, or nil: unwrapped
}

// planner builds the node tree of a schema: of hamba's resolved composite
// when there is a reader schema, walking the writer's schema beside it (to
// see promotions and the writer's union indexes) and the reader's (whose
// shape the output takes: its field order, its union forms).
type planner struct {
	done map[hamba.Schema]*node // named records, for recursive schemas
	// reader: s is a resolved composite, and every record written has its
	// reader record (a record without one would be written in the
	// writer's shape: refused rather than guessed).
	reader bool
}

func newPlanner(reader bool) *planner {
	return &planner{done: map[hamba.Schema]*node{}, reader: reader}
}

func deref(s hamba.Schema) hamba.Schema {
	if r, ok := s.(*hamba.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// build compiles s (the resolved composite, or the writer itself) where w
// is the writer's schema at the same place and r the reader's (nil without
// a reader schema, or under a writer field the reader drops).
func (p *planner) build(s, w, r hamba.Schema) (*node, error) {
	s, w = deref(s), deref(w)
	if r != nil {
		r = deref(r)
		if ru, ok := r.(*hamba.UnionSchema); ok && s.Type() != hamba.Union {
			// The writer's value is one branch of the reader's union:
			// written in the reader union's form.
			return p.intoUnion(s, w, ru)
		}
	}
	switch t := s.(type) {
	case *hamba.NullSchema:
		return &node{kind: kNull, zeroSize: true}, nil
	case *hamba.PrimitiveSchema:
		return primitive(t, w)
	case *hamba.FixedSchema:
		return fixed(t), nil
	case *hamba.EnumSchema:
		return enum(t, w)
	case *hamba.ArraySchema:
		wa, ok := w.(*hamba.ArraySchema)
		if !ok {
			return nil, mismatch(s, w)
		}
		var ri hamba.Schema
		if ra, ok := r.(*hamba.ArraySchema); ok {
			ri = ra.Items()
		}
		e, err := p.build(t.Items(), wa.Items(), ri)
		if err != nil {
			return nil, err
		}
		return &node{kind: kArray, elem: e}, nil
	case *hamba.MapSchema:
		wm, ok := w.(*hamba.MapSchema)
		if !ok {
			return nil, mismatch(s, w)
		}
		var rv hamba.Schema
		if rm, ok := r.(*hamba.MapSchema); ok {
			rv = rm.Values()
		}
		e, err := p.build(t.Values(), wm.Values(), rv)
		if err != nil {
			return nil, err
		}
		return &node{kind: kMap, elem: e}, nil
	case *hamba.UnionSchema:
		return p.union(t, w, r)
	case *hamba.RecordSchema:
		return p.record(t, w, r)
	}
	return nil, fmt.Errorf("avro: unsupported schema type %s", s.Type())
}

func mismatch(s, w hamba.Schema) error {
	return fmt.Errorf("avro: resolved schema %s does not follow writer schema %s", s.Type(), w.Type())
}

func primitive(t *hamba.PrimitiveSchema, w hamba.Schema) (*node, error) {
	n := &node{}
	switch t.Type() {
	case hamba.Boolean:
		n.kind = kBool
	case hamba.Int:
		n.kind = kInt
	case hamba.Long:
		// An int promoted to long has the same zig-zag varint encoding.
		n.kind = kLong
	case hamba.Float, hamba.Double:
		n.kind = kFloat
		if t.Type() == hamba.Double {
			n.kind = kDouble
		}
		n.wire = n.kind
		switch w.Type() {
		case hamba.Int, hamba.Long:
			n.wire = kLong
		case hamba.Float:
			n.wire = kFloat
		}
	case hamba.Bytes:
		// A string promoted to bytes has the same encoding.
		n.kind = kBytes
	case hamba.String:
		n.kind = kString
	default:
		return nil, fmt.Errorf("avro: unsupported primitive type %s", t.Type())
	}
	if l := t.Logical(); l != nil {
		logical(n, l)
	}
	return n, nil
}

// logical narrows n's kind to its logical type; hamba's parser has already
// dropped a logical type on the wrong underlying type (or unknown to it),
// and the underlying type then stands.
func logical(n *node, l hamba.LogicalSchema) {
	switch l.Type() {
	case hamba.Decimal:
		n.scale = l.(*hamba.DecimalLogicalSchema).Scale()
		n.prec = l.(*hamba.DecimalLogicalSchema).Precision()
		if n.kind == kFixed {
			n.kind = kDecimalFixed
		} else {
			n.kind = kDecimalBytes
		}
	case hamba.Date:
		n.kind = kDate
	case hamba.TimeMillis:
		n.kind = kTimeMillis
	case hamba.TimeMicros:
		n.kind = kTimeMicros
	case hamba.TimestampMillis:
		n.kind = kTimestampMillis
	case hamba.TimestampMicros:
		n.kind = kTimestampMicros
	case hamba.LocalTimestampMillis:
		n.kind = kLocalTimestampMillis
	case hamba.LocalTimestampMicros:
		n.kind = kLocalTimestampMicros
	case hamba.Duration:
		n.kind = kDuration
	}
	// uuid: a string, written as one.
}

func fixed(t *hamba.FixedSchema) *node {
	n := &node{kind: kFixed, size: t.Size(), zeroSize: t.Size() == 0}
	if l := t.Logical(); l != nil {
		logical(n, l)
	}
	return n
}

func enum(t *hamba.EnumSchema, w hamba.Schema) (*node, error) {
	we, ok := w.(*hamba.EnumSchema)
	if !ok {
		return nil, mismatch(t, w)
	}
	// Symbol maps a writer index to the reader's symbol (or the reader's
	// default for a symbol it lacks) when t is resolved.
	n := &node{kind: kEnum, symbols: make([][]byte, len(we.Symbols()))}
	for i := range n.symbols {
		if sym, ok := t.Symbol(i); ok {
			n.symbols[i] = quote(sym)
		}
	}
	return n, nil
}

func (p *planner) union(t *hamba.UnionSchema, w, r hamba.Schema) (*node, error) {
	wu, ok := w.(*hamba.UnionSchema)
	if !ok || len(wu.Types()) != len(t.Types()) {
		return nil, mismatch(t, w)
	}
	types := t.Types()
	n := &node{kind: kUnion, branches: make([]branch, len(types))}
	// The output's form is the reader's: its union, or its one type when
	// the reader is no union (each writer branch then resolves to it).
	form := t
	ru, readerUnion := r.(*hamba.UnionSchema)
	if readerUnion {
		form = ru
	}
	wrap := r == nil || readerUnion
	for i, b := range types {
		rb := r
		if readerUnion {
			rb = branchNamed(ru, typeName(b))
		}
		bn, err := p.build(b, wu.Types()[i], rb)
		if err != nil {
			return nil, err
		}
		n.branches[i].node = bn
		if wrap && !nullable(form) && b.Type() != hamba.Null {
			n.branches[i].open = unionKey(b)
		}
	}
	return n, nil
}

// intoUnion compiles a writer value that is not a union, read as the
// reader union's branch hamba resolved it to (s).
func (p *planner) intoUnion(s, w hamba.Schema, ru *hamba.UnionSchema) (*node, error) {
	inner, err := p.build(s, w, branchNamed(ru, typeName(s)))
	if err != nil {
		return nil, err
	}
	if nullable(ru) || s.Type() == hamba.Null {
		return inner, nil
	}
	return &node{kind: kWrap, branches: []branch{{node: inner, open: unionKey(s)}}}, nil
}

// nullable: ["null", T] and [T, "null"] are T's value or null; any other
// union is Avro's JSON encoding, {"<type name>": value}.
func nullable(u *hamba.UnionSchema) bool {
	types := u.Types()
	return len(types) == 2 && (types[0].Type() == hamba.Null) != (types[1].Type() == hamba.Null)
}

func unionKey(b hamba.Schema) []byte {
	return append(append([]byte("{"), quote(typeName(b))...), ':')
}

// branchNamed is the branch of u named name (a union's branches have
// distinct names), or nil.
func branchNamed(u *hamba.UnionSchema, name string) hamba.Schema {
	for _, b := range u.Types() {
		if typeName(b) == name {
			return b
		}
	}
	return nil
}

// typeName is a union branch's name in Avro's JSON encoding: the full name
// of a named type, else the type's own name (a logical type's underlying
// type: "long" for a timestamp-millis).
func typeName(s hamba.Schema) string {
	s = deref(s)
	if n, ok := s.(hamba.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

func (p *planner) record(t *hamba.RecordSchema, w, r hamba.Schema) (*node, error) {
	if n, ok := p.done[t]; ok {
		return n, nil
	}
	wr, ok := w.(*hamba.RecordSchema)
	if !ok {
		return nil, mismatch(t, w)
	}
	n := &node{kind: kRecord}
	p.done[t] = n
	reader, _ := r.(*hamba.RecordSchema) // nil without a reader schema
	if p.reader && reader == nil {
		return nil, fmt.Errorf("avro: no reader schema record for resolved record %s", t.FullName())
	}
	readerIndex := map[string]int{}
	if reader != nil {
		for i, f := range reader.Fields() {
			readerIndex[f.Name()] = i
		}
	}
	wf := wr.Fields()
	n.zeroSize = true
	type placed struct{ field, reader int }
	var out []placed
	for i, f := range t.Fields() {
		fd := field{name: f.Name(), key: append(quote(f.Name()), ':')}
		ri, inReader := readerIndex[f.Name()]
		switch {
		case i >= len(wf):
			// Resolution appends the reader fields the writer lacks.
			def, err := defaultJSON(f)
			if err != nil {
				return nil, err
			}
			fd.def = def
			// Never read (def is written); its type, for ValueSchema.
			if fd.node, err = newPlanner(false).build(f.Type(), f.Type(), nil); err != nil {
				return nil, err
			}
		default:
			// Resolution keeps each writer field in its place: under the
			// reader's name, or under the writer's when the reader lacks it.
			fd.skip = reader != nil && !inReader
			var fn *node
			var err error
			if fd.skip {
				// Read to be dropped: the writer's shape.
				fn, err = newPlanner(false).build(f.Type(), wf[i].Type(), nil)
			} else {
				var rf hamba.Schema
				if reader != nil {
					rf = reader.Fields()[ri].Type()
				}
				fn, err = p.build(f.Type(), wf[i].Type(), rf)
			}
			if err != nil {
				return nil, err
			}
			fd.node = fn
			n.zeroSize = n.zeroSize && fn.zeroSize
		}
		n.fields = append(n.fields, fd)
		if !fd.skip {
			out = append(out, placed{i, ri})
		}
	}
	if reader != nil {
		// Write the fields in the reader's order; stream when it is the
		// wire's.
		inOrder := true
		for i := 1; i < len(out); i++ {
			inOrder = inOrder && out[i-1].reader < out[i].reader
		}
		if !inOrder {
			n.order = make([]int, len(reader.Fields()))
			for _, pl := range out {
				n.order[pl.reader] = pl.field
			}
		}
	}
	return n, nil
}
