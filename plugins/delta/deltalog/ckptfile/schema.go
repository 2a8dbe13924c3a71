package ckptfile

import (
	"fmt"
	"math/big"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/shared/pqgroup"
)

// Kind is the Parquet shape of a Field: a group, a list or map of strings,
// or a leaf of one physical and logical type.
type Kind int

const (
	Group        Kind = iota
	String            // BYTE_ARRAY, STRING
	Int64             // INT64
	Int32             // INT32
	Bool              // BOOLEAN
	StringList        // list<string>, elements nullable (3-level list)
	StringMap         // map<string,string>, values nullable (key_value group)
	Int8              // INT32, INT(8)
	Int16             // INT32, INT(16)
	Float             // FLOAT
	Double            // DOUBLE
	Date              // INT32, DATE
	Timestamp         // INT64, TIMESTAMP(MICROS, adjusted to UTC)
	TimestampNTZ      // INT64, TIMESTAMP(MICROS, not adjusted)
	Decimal           // DECIMAL(Precision, Scale): INT32, INT64 or a signed FIXED_LEN_BYTE_ARRAY
)

// Field is one field of a checkpoint schema. The caller declares the tree
// (which actions and fields a checkpoint holds is the protocol's
// business); NewSchema derives each leaf's column index and definition
// level. Every field is optional and every leaf PLAIN-encoded.
type Field struct {
	Name string
	Kind Kind
	Kids []*Field
	// Precision and Scale of a Decimal.
	Precision, Scale int

	col     int // first leaf column
	nleaves int
	def     int             // definition level when the field is non-null
	nulls   []parquet.Value // the field written as null, cached
}

// NewGroup is a group field of kids, in their order.
func NewGroup(name string, kids ...*Field) *Field { return &Field{Name: name, Kind: Group, Kids: kids} }

// NewLeaf is a field of kind k (not a Group or Decimal).
func NewLeaf(name string, k Kind) *Field { return &Field{Name: name, Kind: k} }

// NewDecimal is a Decimal field.
func NewDecimal(name string, precision, scale int) *Field {
	return &Field{Name: name, Kind: Decimal, Precision: precision, Scale: scale}
}

// Kid is the child field named name, or nil.
func (f *Field) Kid(name string) *Field {
	for _, k := range f.Kids {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// parquetNode renders the field as a parquet-go node.
func (f *Field) parquetNode() parquet.Node {
	var pn parquet.Node
	switch f.Kind {
	case Group:
		g := pqgroup.New(len(f.Kids))
		for _, k := range f.Kids {
			g.Add(k.Name, k.parquetNode())
		}
		pn = g
	case StringList:
		pn = parquet.List(parquet.Optional(parquet.String()))
	case StringMap:
		pn = parquet.Map(parquet.String(), parquet.Optional(parquet.String()))
	case Decimal:
		pn = DecimalNode(f.Precision, f.Scale)
	default:
		pn = leafNode(f.Kind)
	}
	if pn.Leaf() {
		pn = parquet.Encoded(pn, &parquet.Plain)
	}
	return parquet.Optional(pn)
}

// leafNode is the Parquet node of a leaf kind but Decimal.
func leafNode(k Kind) parquet.Node {
	switch k {
	case Int64:
		return parquet.Leaf(parquet.Int64Type)
	case Int32:
		return parquet.Leaf(parquet.Int32Type)
	case Bool:
		return parquet.Leaf(parquet.BooleanType)
	case Int8:
		return parquet.Int(8)
	case Int16:
		return parquet.Int(16)
	case Float:
		return parquet.Leaf(parquet.FloatType)
	case Double:
		return parquet.Leaf(parquet.DoubleType)
	case Date:
		return parquet.Date()
	case Timestamp:
		return parquet.TimestampAdjusted(parquet.Microsecond, true)
	case TimestampNTZ:
		return parquet.TimestampAdjusted(parquet.Microsecond, false)
	}
	return parquet.String()
}

// DecimalNode is the Parquet node of a Delta decimal(precision, scale), in
// data files as in checkpoint stats: INT32 up to precision 9, INT64 up to
// 18, else a signed FIXED_LEN_BYTE_ARRAY of DecimalWidth bytes.
func DecimalNode(precision, scale int) parquet.Node {
	switch {
	case precision <= 9:
		return parquet.Decimal(scale, precision, parquet.Int32Type)
	case precision <= 18:
		return parquet.Decimal(scale, precision, parquet.Int64Type)
	}
	return parquet.Decimal(scale, precision, SignedFixedLenByteArrayType(DecimalWidth(precision)))
}

// DecimalWidth is the smallest two's complement byte width holding every
// unscaled value of the precision (Spark's minBytesForPrecision).
func DecimalWidth(precision int) int {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	for n := 1; ; n++ {
		if limit.Cmp(new(big.Int).Lsh(big.NewInt(1), uint(8*n-1))) <= 0 {
			return n
		}
	}
}

// layout assigns leaf column indexes (depth first, the order parquet-go
// gives a schema's leaves) and definition levels.
func (f *Field) layout(col *int, parentDef int) {
	f.col, f.def = *col, parentDef+1
	switch f.Kind {
	case Group:
		for _, k := range f.Kids {
			k.layout(col, f.def)
		}
	case StringMap:
		*col += 2
	default:
		*col++
	}
	f.nleaves = *col - f.col
}

// Schema is the Parquet schema of one checkpoint file: its top-level
// fields (one per action) as the columns' order and levels.
type Schema struct {
	top    []*Field
	schema *parquet.Schema
	ncols  int
}

// NewSchema lays out the top-level fields (in file order) as a Parquet
// schema. The fields are the schema's from then on: build new ones for
// another schema.
func NewSchema(top ...*Field) (*Schema, error) {
	s := &Schema{top: top}
	col := 0
	for _, k := range top {
		k.layout(&col, 0)
	}
	s.ncols = col
	g := pqgroup.New(len(top))
	for _, k := range top {
		g.Add(k.Name, k.parquetNode())
	}
	s.schema = parquet.NewSchema("spark_schema", g)
	if n := len(s.schema.Columns()); n != s.ncols {
		return nil, fmt.Errorf("deltalog: internal error: checkpoint schema has %d leaf columns, expected %d", n, s.ncols)
	}
	return s, nil
}

// String is the Parquet schema's text: two schemas with the same text
// encode the same way.
func (s *Schema) String() string { return s.schema.String() }
