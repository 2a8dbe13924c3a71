package encode

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
)

// Splicing: compaction's fast path. The data files of 1000-record batches
// hold one row group of plain-encoded data pages each; a Parquet column
// chunk may hold any number of data pages, each self-contained (its own
// header, levels and values), so the row groups of several such files can
// be put one after another as one row group without decoding a value: each
// column's pages are copied as they are, the chunk metadata added up
// (ckptfile.RowGroup.Append, statistics merged). That costs a copy of the
// bytes instead of a decode and encode of every value (Merge), which
// measured several times the CPU.
//
// A file qualifies when each of its column chunks has data pages only (no
// dictionary page: its values would need the dictionary of their own
// chunk), and every file has the same schema, writer (created_by: readers
// work around writers' bugs by it) and codec per column.

// ErrNotSpliceable is returned by Splice for files that do not qualify:
// Merge them.
var ErrNotSpliceable = errors.New("encode: files cannot be spliced")

// Splice puts the rows of srcs (whole Parquet files) together as one row
// group of a new file, appended to out, and returns it with its row count.
// footers are the files' footers when the caller decoded them
// (ckptfile.DecodeFooter) already, else nil.
func Splice(out []byte, srcs [][]byte, footers []*format.FileMetaData) ([]byte, int64, error) {
	var md *format.FileMetaData
	var all *ckptfile.RowGroup
	var types []parquet.Type
	for i, data := range srcs {
		var fmd *format.FileMetaData
		if footers != nil {
			fmd = footers[i]
		} else if f, err := ckptfile.DecodeFooter(data); err == nil {
			fmd = f
		} else {
			return nil, 0, err
		}
		if i == 0 {
			md = fmd
			schema, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
			if err != nil {
				return nil, 0, err
			}
			for _, path := range schema.Schema().Columns() {
				leaf, _ := schema.Schema().Lookup(path...)
				types = append(types, boundsType(leaf.Node.Type()))
			}
		} else if fmd.CreatedBy != md.CreatedBy || SchemaKey(fmd) != SchemaKey(md) {
			return nil, 0, fmt.Errorf("%w: file %d has another schema or writer", ErrNotSpliceable, i)
		}
		for r := range fmd.RowGroups {
			g, err := spliceGroup(data, &fmd.RowGroups[r], len(types))
			if err != nil {
				return nil, 0, err
			}
			if all == nil {
				all = g
				continue
			}
			for j := range g.Cols {
				if g.Cols[j].MD.Codec != all.Cols[j].MD.Codec {
					return nil, 0, fmt.Errorf("%w: column %v has another codec in file %d", ErrNotSpliceable, g.Cols[j].MD.PathInSchema, i)
				}
			}
			all.Append(g, types)
		}
	}
	if all == nil {
		return nil, 0, fmt.Errorf("%w: no rows", ErrNotSpliceable)
	}
	head := *md // the caller's footer stays as it was
	head.RowGroups = nil
	data, err := ckptfile.Assemble(out, ckptfile.FooterOf(&head), []*ckptfile.RowGroup{all})
	return data, all.Rows, err
}

// boundsType is t as column chunk bounds are compared: a wide decimal read
// back from a file is parquet-go's FIXED_LEN_BYTE_ARRAY, which orders its
// values as unsigned bytes (-5.00 above 3.00), where Parquet orders
// DECIMAL as signed numbers (ckptfile.SignedFixedLenByteArrayType).
func boundsType(t parquet.Type) parquet.Type {
	if wideDecimal(t) != nil {
		return ckptfile.SignedFixedLenByteArrayType(t.Length())
	}
	return t
}

// wideDecimal is t's DECIMAL annotation when t is a FIXED_LEN_BYTE_ARRAY
// decimal, else nil.
func wideDecimal(t parquet.Type) *format.DecimalType {
	if lt := t.LogicalType(); t.Kind() == parquet.FixedLenByteArray && lt != nil {
		d, _ := lt.Value.(*format.DecimalType)
		return d
	}
	return nil
}

// SchemaKey is a file's schema (from its footer) as a string: equal for
// files whose schemas are the same, element by element. (reflect.DeepEqual
// of the decoded thrift structs found identical schemas unequal.)
func SchemaKey(md *format.FileMetaData) string {
	b, err := thrift.Marshal(new(thrift.CompactProtocol), &format.FileMetaData{Schema: md.Schema})
	if err != nil {
		return fmt.Sprintf("unkeyed %p", md) // equal to no other file's key
	}
	return string(b)
}

// spliceGroup is one row group of a file as a ckptfile.RowGroup whose
// pages point into data.
func spliceGroup(data []byte, rg *format.RowGroup, ncols int) (*ckptfile.RowGroup, error) {
	if len(rg.Columns) != ncols {
		return nil, fmt.Errorf("encode: row group has %d columns, the schema %d", len(rg.Columns), ncols)
	}
	g := &ckptfile.RowGroup{Rows: rg.NumRows, Cols: make([]ckptfile.Chunk, ncols)}
	for j := range rg.Columns {
		cc := &rg.Columns[j]
		m := cc.MetaData
		if cc.FilePath != "" || m.DictionaryPageOffset != 0 ||
			slices.ContainsFunc(m.Encoding, func(e format.Encoding) bool {
				return e == format.PlainDictionary || e == format.RLEDictionary
			}) ||
			slices.ContainsFunc(m.EncodingStats, func(s format.PageEncodingStats) bool {
				return s.PageType != format.DataPage && s.PageType != format.DataPageV2
			}) {
			return nil, fmt.Errorf("%w: column %v has pages other than plain data pages", ErrNotSpliceable, m.PathInSchema)
		}
		lo, hi := m.DataPageOffset, m.DataPageOffset+m.TotalCompressedSize
		if lo < 4 || hi > int64(len(data))-8 {
			return nil, fmt.Errorf("encode: column chunk at %d..%d of a %d-byte file", lo, hi, len(data))
		}
		m.DataPageOffset, m.IndexPageOffset, m.BloomFilterOffset, m.BloomFilterLength = 0, 0, 0, 0
		g.Cols[j] = ckptfile.Chunk{Pages: [][]byte{data[lo:hi:hi]}, MD: m}
		g.Size += m.TotalCompressedSize
	}
	return g, nil
}

// copySchema is the writer schema of a file that copies files read back
// (Merge, Filter): their schema with wide decimals' chunk bounds signed
// (boundsType), as in a batch's file, and every leaf encoded as the
// encoder encodes it (strings and binaries dictionary-encoded, the rest
// plain).
// The source nodes carry the encodings of the file's writer, which may be
// ones parquet-go cannot write (Spark's RLE on an INT32 column).
func copySchema(schema *parquet.Schema) *parquet.Schema {
	return parquet.NewSchema(schema.Name(), copyNode(schema))
}

func copyNode(n parquet.Node) parquet.Node {
	if n.Leaf() {
		if d := wideDecimal(n.Type()); d != nil {
			n = leafNode{n, parquet.Decimal(int(d.Scale), int(d.Precision), boundsType(n.Type())).Type()}
		}
		if n.Type().Kind() == parquet.ByteArray && !isDecimal(n.Type()) {
			return parquet.Encoded(n, &parquet.RLEDictionary)
		}
		return parquet.Encoded(n, &parquet.Plain)
	}
	fields := n.Fields()
	out := make([]parquet.Field, len(fields))
	for i, f := range fields {
		out[i] = field{copyNode(f), f}
	}
	return groupNode{n, out}
}

func isDecimal(t parquet.Type) bool {
	lt := t.LogicalType()
	if lt == nil {
		return false
	}
	_, ok := lt.Value.(*format.DecimalType)
	return ok
}

// leafNode is a leaf with another type; groupNode a group with other fields.
type leafNode struct {
	parquet.Node
	typ parquet.Type
}

func (n leafNode) Type() parquet.Type { return n.typ }

type groupNode struct {
	parquet.Node
	fields []parquet.Field
}

func (n groupNode) Fields() []parquet.Field { return n.fields }

// field is node under the name of f.
type field struct {
	parquet.Node
	f parquet.Field
}

func (f field) Name() string                           { return f.f.Name() }
func (f field) Value(base reflect.Value) reflect.Value { return f.f.Value(base) }
