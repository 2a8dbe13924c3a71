package encode

import (
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/shared/pqgroup"
)

// parquetSchema builds the file schema from the node tree. parquet.Group is a
// map and sorts its fields by name; the table's column order must survive
// into the file (Spark and pyarrow show columns in file order), so structs
// use pqgroup.Ordered instead.
func parquetSchema(root *node, dictionary bool) *parquet.Schema {
	b := schemaBuilder{dictionary: dictionary}
	return parquet.NewSchema("spark_schema", b.structGroup(root))
}

type schemaBuilder struct {
	dictionary bool // dictionary-encode strings and binary
}

func (b schemaBuilder) structGroup(n *node) *pqgroup.Ordered {
	g := pqgroup.New(len(n.fields))
	for _, f := range n.fields {
		if f.part >= 0 {
			continue // partition values live in the log, not in the file
		}
		g.Add(f.name, b.node(f))
	}
	return g
}

// parquetNode maps one Delta value to its Parquet node (PROTOCOL.md "Delta
// Data Type to Parquet Type Mappings"), optional when nullable.
func (b schemaBuilder) node(n *node) parquet.Node {
	var pn parquet.Node
	switch n.kind {
	case kString:
		pn = parquet.String()
	case kBinary:
		pn = parquet.Leaf(parquet.ByteArrayType)
	case kBool:
		pn = parquet.Leaf(parquet.BooleanType)
	case kByte:
		pn = parquet.Int(8)
	case kShort:
		pn = parquet.Int(16)
	case kInt:
		pn = parquet.Leaf(parquet.Int32Type)
	case kLong:
		pn = parquet.Leaf(parquet.Int64Type)
	case kFloat:
		pn = parquet.Leaf(parquet.FloatType)
	case kDouble:
		pn = parquet.Leaf(parquet.DoubleType)
	case kDate:
		pn = parquet.Date()
	case kTimestamp:
		pn = parquet.TimestampAdjusted(parquet.Microsecond, true)
	case kTimestampNTZ:
		pn = parquet.TimestampAdjusted(parquet.Microsecond, false)
	case kDecimal:
		switch {
		case n.precision <= 9:
			pn = parquet.Decimal(n.scale, n.precision, parquet.Int32Type)
		case n.precision <= 18:
			pn = parquet.Decimal(n.scale, n.precision, parquet.Int64Type)
		default:
			pn = parquet.Decimal(n.scale, n.precision, deltalog.SignedFixedLenByteArrayType(decimalBytes(n.precision)))
		}
	case kStruct:
		pn = b.structGroup(n)
	case kArray:
		pn = parquet.List(b.node(n.elem))
	case kMap:
		pn = parquet.Map(b.node(n.key), b.node(n.val))
	}
	if pn.Leaf() {
		pn = parquet.Encoded(pn, b.encoding(n))
	}
	if n.nullable {
		return parquet.Optional(pn)
	}
	return parquet.Required(pn)
}

// encoding picks a leaf's data page encoding: PLAIN, or RLE_DICTIONARY for
// strings and binary when Options.DictionaryEncoding is set (the writer
// falls back to PLAIN once a dictionary outgrows DictionaryMaxBytes). Never
// DELTA_LENGTH_BYTE_ARRAY, parquet-go's default for byte arrays, which not
// every engine reads.
//
// PLAIN is the default because, measured on 1000-record batches of typical
// events, dictionary encoding cost about 10% of the encoder's CPU and saved
// under 1% of file size: a batch file holds too few values for a dictionary
// to beat snappy on repeated strings. Larger batches may differ.
func (b schemaBuilder) encoding(n *node) encoding.Encoding {
	if b.dictionary && (n.kind == kString || n.kind == kBinary) {
		return &parquet.RLEDictionary
	}
	return &parquet.Plain
}

// decimalBytes is the smallest two's complement width holding every
// unscaled value of the precision (Spark's minBytesForPrecision).
func decimalBytes(precision int) int {
	n := 1
	for !fitsDigits(n, precision) {
		n++
	}
	return n
}

// fitsDigits reports whether 10^p - 1 < 2^(8n-1), exactly, for p <= 38.
func fitsDigits(n, p int) bool {
	bits := 8*n - 1
	if bits >= 127 {
		return true // 10^38 - 1 < 2^127
	}
	// compare 10^p - 1 < 2^bits using 128-bit arithmetic
	var hi, lo uint64 = 0, 1
	for range p {
		hi, lo = mul128(hi, lo, 10)
	}
	// 10^p - 1
	if lo == 0 {
		hi--
	}
	lo--
	var thi, tlo uint64
	if bits >= 64 {
		thi = 1 << (bits - 64)
	} else {
		tlo = 1 << bits
	}
	return hi < thi || (hi == thi && lo < tlo)
}
