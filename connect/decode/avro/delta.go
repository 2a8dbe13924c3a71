package avro

import (
	"encoding/json"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// The value schema (decode.Described) of a compiled schema: the type of the
// JSON the codec writes, read off the same node tree the JSON writer walks,
// so the two cannot disagree (docs/decode.md, "Value schema").

func newCodec(root *node) *codec {
	c := &codec{root: root}
	if root.kind == kRecord {
		c.schema, _ = describer{open: map[*node]bool{}}.record(root).MarshalJSON()
	}
	return c
}

// ValueSchema implements decode.Described: nil when the datum is no record.
func (c *codec) ValueSchema() []byte { return c.schema }

// maxDecimalPrecision is the widest decimal the neutral form (Delta's
// decimal) holds; a wider Avro decimal is described as a string, which
// keeps every digit.
const maxDecimalPrecision = 38

type describer struct {
	open map[*node]bool // the records being described: a recursive one is a string
}

// typeOf returns n's type and whether its JSON may be null.
func (d describer) typeOf(n *node) (*decode.Type, bool) {
	p := decode.Primitive
	switch n.kind {
	case kNull:
		return p("string"), true // only ever null: any nullable type fits
	case kBool:
		return p("boolean"), false
	case kInt:
		return p("integer"), false
	case kLong:
		return p("long"), false
	case kFloat, kDouble:
		// A float is a double column: a later version of the schema may
		// make the field a double (a compatible change), whose values a
		// float column would round; every float, and the shortest text it
		// is written as, reads back exactly as a double.
		return p("double"), false
	case kBytes, kFixed:
		return p("binary"), false
	case kString, kEnum, kTimeMillis, kTimeMicros:
		return p("string"), false
	case kDecimalBytes, kDecimalFixed:
		if n.prec < 1 || n.prec > maxDecimalPrecision || n.scale > n.prec {
			return p("string"), false
		}
		return decode.Decimal(n.prec, n.scale), false
	case kDate:
		return p("date"), false
	case kTimestampMillis, kTimestampMicros:
		return p("timestamp"), false
	case kLocalTimestampMillis, kLocalTimestampMicros:
		return p("timestamp_ntz"), false
	case kDuration:
		return decode.Struct(decode.Field{Name: "months", Type: p("long")}, decode.Field{Name: "days", Type: p("long")},
			decode.Field{Name: "milliseconds", Type: p("long")}), false
	case kArray:
		e, null := d.typeOf(n.elem)
		return decode.Array(e, null), false
	case kMap:
		e, null := d.typeOf(n.elem)
		return decode.Map(e, null), false
	case kRecord:
		return d.record(n), false
	case kWrap:
		b := n.branches[0]
		t, null := d.typeOf(b.node)
		return decode.Struct(decode.Field{Name: branchName(b.open), Type: t, Nullable: null}), false
	case kUnion:
		return d.union(n)
	}
	return p("string"), true
}

func (d describer) record(n *node) *decode.Type {
	if d.open[n] {
		// A recursive type has no finite column type: the nested value
		// lands as its JSON text.
		return decode.Primitive("string")
	}
	d.open[n] = true
	defer delete(d.open, n)
	st := decode.Struct()
	add := func(f *field) {
		t, null := d.typeOf(f.node)
		st.Fields = append(st.Fields, decode.Field{Name: f.name, Type: t, Nullable: null})
	}
	if n.order != nil {
		for _, i := range n.order {
			add(&n.fields[i])
		}
		return st
	}
	for i := range n.fields {
		if !n.fields[i].skip {
			add(&n.fields[i])
		}
	}
	return st
}

// union: ["null", T] is T, nullable; a union written in Avro's JSON
// encoding ({"<type name>": value}) is a struct with a nullable field per
// non-null branch; a union every branch of which resolves to one reader
// type is that type.
func (d describer) union(n *node) (*decode.Type, bool) {
	var wrapped bool
	null := false
	for _, b := range n.branches {
		wrapped = wrapped || b.open != nil
		null = null || b.node.kind == kNull
	}
	if wrapped {
		st := decode.Struct()
		for _, b := range n.branches {
			if b.open == nil {
				continue // the null branch: the whole value is null
			}
			t, _ := d.typeOf(b.node)
			st.Fields = append(st.Fields, decode.Field{Name: branchName(b.open), Type: t, Nullable: true})
		}
		return st, null
	}
	for _, b := range n.branches {
		if b.node.kind != kNull {
			t, bnull := d.typeOf(b.node)
			return t, null || bnull
		}
	}
	return decode.Primitive("string"), true
}

// branchName is the key of a branch's `{"name":`.
func branchName(open []byte) string {
	var s string
	_ = json.Unmarshal(open[1:len(open)-1], &s)
	return s
}
