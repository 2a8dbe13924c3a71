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

// planner builds the node tree of a schema, hamba's resolved composite
// when there is a reader schema (it then walks the writer schema beside it
// to see promotions and removed fields).
type planner struct {
	// readerRecords are the reader schema's records by full name: a
	// resolved record takes its field order from its reader record.
	readerRecords map[string]*hamba.RecordSchema
	done          map[hamba.Schema]*node // named records, for recursion
}

func newPlanner(reader hamba.Schema) *planner {
	p := &planner{readerRecords: map[string]*hamba.RecordSchema{}, done: map[hamba.Schema]*node{}}
	if reader != nil {
		collectRecords(reader, p.readerRecords)
	}
	return p
}

func collectRecords(s hamba.Schema, into map[string]*hamba.RecordSchema) {
	switch t := s.(type) {
	case *hamba.RecordSchema:
		if _, ok := into[t.FullName()]; ok {
			return
		}
		into[t.FullName()] = t
		for _, f := range t.Fields() {
			collectRecords(f.Type(), into)
		}
	case *hamba.ArraySchema:
		collectRecords(t.Items(), into)
	case *hamba.MapSchema:
		collectRecords(t.Values(), into)
	case *hamba.UnionSchema:
		for _, b := range t.Types() {
			collectRecords(b, into)
		}
	}
}

func deref(s hamba.Schema) hamba.Schema {
	if r, ok := s.(*hamba.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// build compiles s (the schema the output follows: the resolved composite,
// or the writer itself) where w is the writer's schema at the same place.
func (p *planner) build(s, w hamba.Schema) (*node, error) {
	s, w = deref(s), deref(w)
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
		e, err := p.build(t.Items(), wa.Items())
		if err != nil {
			return nil, err
		}
		return &node{kind: kArray, elem: e}, nil
	case *hamba.MapSchema:
		wm, ok := w.(*hamba.MapSchema)
		if !ok {
			return nil, mismatch(s, w)
		}
		e, err := p.build(t.Values(), wm.Values())
		if err != nil {
			return nil, err
		}
		return &node{kind: kMap, elem: e}, nil
	case *hamba.UnionSchema:
		return p.union(t, w)
	case *hamba.RecordSchema:
		return p.record(t, w)
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

func (p *planner) union(t *hamba.UnionSchema, w hamba.Schema) (*node, error) {
	wu, ok := w.(*hamba.UnionSchema)
	if !ok || len(wu.Types()) != len(t.Types()) {
		return nil, mismatch(t, w)
	}
	types := t.Types()
	n := &node{kind: kUnion, branches: make([]branch, len(types))}
	// ["null", T] and [T, "null"] are T's value or null; any other union is
	// Avro's JSON encoding, {"<type name>": value}.
	nullable := len(types) == 2 && (types[0].Type() == hamba.Null) != (types[1].Type() == hamba.Null)
	for i, b := range types {
		bn, err := p.build(b, wu.Types()[i])
		if err != nil {
			return nil, err
		}
		n.branches[i].node = bn
		if !nullable && b.Type() != hamba.Null {
			n.branches[i].open = append(append([]byte("{"), quote(typeName(b))...), ':')
		}
	}
	return n, nil
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

func (p *planner) record(t *hamba.RecordSchema, w hamba.Schema) (*node, error) {
	if n, ok := p.done[t]; ok {
		return n, nil
	}
	wr, ok := w.(*hamba.RecordSchema)
	if !ok {
		return nil, mismatch(t, w)
	}
	n := &node{kind: kRecord}
	p.done[t] = n
	reader := p.readerRecords[t.FullName()] // nil without a reader schema
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
		fd := field{key: append(quote(f.Name()), ':')}
		ri, inReader := readerIndex[f.Name()]
		switch {
		case i >= len(wf):
			// Resolution appends the reader fields the writer lacks.
			def, err := defaultJSON(f)
			if err != nil {
				return nil, err
			}
			fd.def = def
		default:
			// Resolution keeps each writer field in its place: under the
			// reader's name, or under the writer's when the reader lacks it.
			fd.skip = reader != nil && !inReader
			fn, err := p.build(f.Type(), wf[i].Type())
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

// defaultJSON is the JSON of a reader field's default: hamba encodes the
// default with the field's schema, and the field's own plan decodes it, so
// a default follows exactly the rules of a decoded value.
func defaultJSON(f *hamba.Field) ([]byte, error) {
	if !f.HasDefault() {
		return nil, fmt.Errorf("avro: reader field %q is not in the writer schema and has no default", f.Name())
	}
	bin, err := hamba.Marshal(f.Type(), f.Default())
	if err != nil {
		return nil, fmt.Errorf("avro: default of reader field %q: %w", f.Name(), err)
	}
	n, err := newPlanner(nil).build(f.Type(), f.Type())
	if err != nil {
		return nil, err
	}
	out, err := (&codec{root: n}).AppendJSON(nil, bin)
	if err != nil {
		return nil, fmt.Errorf("avro: default of reader field %q: %w", f.Name(), err)
	}
	return out, nil
}
