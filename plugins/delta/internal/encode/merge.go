package encode

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Merging data files: the rewrite step of compaction. The rows of several
// Parquet files that share one schema are copied, row by row and value by
// value, into one new file with the encoder's writer settings (SNAPPY at
// s2's default speed, data page v1, PLAIN byte arrays, no page statistics,
// the sink's created_by). Values are copied as they are stored, so every
// column keeps its physical and logical type. The add.stats of the new file
// are collected from the copied values by a deltalog.StatsCollector for
// the table, as the encoder collects them for a batch.

// mergeChunk is how many values are copied at once.
const mergeChunk = 1024

// Merged is the result of Merge.
type Merged struct {
	NumRecords int64
	Size       int64
	Stats      string // add.stats JSON
}

// Merge writes the rows of srcs, which must all have the schema of
// srcs[0], into one Parquet file on w. stats is a collector for the table
// (deltalog.NewStatsCollector), reset first. A statistics column the files
// lack (a column added to the table after they were written) is null in
// every row, as readers see it. Tables with column mapping, whose files
// name columns by physical names, are not for Merge.
func Merge(w io.Writer, srcs []*parquet.File, stats *deltalog.StatsCollector, createdBy string) (Merged, error) {
	if len(srcs) == 0 {
		return Merged{}, errors.New("encode: merge: no files")
	}
	schema := srcs[0].Schema()
	for _, f := range srcs[1:] {
		if !parquet.EqualNodes(f.Schema(), schema) {
			return Merged{}, errors.New("encode: merge: the files' schemas differ")
		}
	}
	feed := newMergeFeed(schema, stats)
	if createdBy == "" {
		createdBy = defaultCreatedBy
	}
	// Written with the files' schema, but wide decimals bounded as signed
	// numbers (signedDecimals), as a batch's file is.
	config, err := parquet.NewWriterConfig(writerOptions(copySchema(schema), createdBy, defaultDictionaryMax, schema.Columns())...)
	if err != nil {
		return Merged{}, fmt.Errorf("encode: merge: parquet writer config: %w", err)
	}
	cw := &countingWriter{w: w}
	pw := parquet.NewGenericWriter[any](cw, config)
	stats.Reset()
	var rows int64
	for _, f := range srcs {
		rows += f.NumRows()
	}
	// Column by column, as the encoder writes a batch: each column's
	// values go from the source pages to its column writer without
	// assembling rows, and the whole file is one row group.
	buf := make([]parquet.Value, mergeChunk)
	for ci, col := range pw.ColumnWriters() {
		leaf, _ := schema.Lookup(schema.Columns()[ci]...)
		for _, f := range srcs {
			for _, rg := range f.RowGroups() {
				if err := copyColumn(col, rg.ColumnChunks()[ci], ci, leaf.MaxRepetitionLevel > 0, buf, feed, nil, nil); err != nil {
					return Merged{}, fmt.Errorf("encode: merge: column %v: %w", schema.Columns()[ci], err)
				}
			}
		}
	}
	if err := pw.Close(); err != nil {
		return Merged{}, fmt.Errorf("encode: merge: write parquet: %w", err)
	}
	for _, st := range feed.missing {
		for range rows {
			st.ObserveNull()
		}
	}
	stats.AddRows(rows)
	js, err := stats.JSON()
	if err != nil {
		return Merged{}, fmt.Errorf("encode: merge: statistics: %w", err)
	}
	return Merged{NumRecords: rows, Size: cw.n, Stats: js}, nil
}

// copyColumn copies one column chunk's values to cw, feeding statistics.
// A non-repeated column's values are rows and go as read; a repeated
// column's are gathered (cloned: they point into the page) and written up
// to a row start, so that no row is split between two writes. With keep
// (Filter), only the values of the rows keep marks are copied; *row is
// the column's row index, carried across chunks.
func copyColumn(cw *parquet.ColumnWriter, chunk parquet.ColumnChunk, ci int, repeated bool, buf []parquet.Value, feed *mergeFeed,
	keep []bool, row *int) error {
	pages := chunk.Pages()
	defer pages.Close()
	var pending []parquet.Value
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		err = copyPage(cw, p, ci, repeated, buf, &pending, feed, keep, row)
		parquet.Release(p)
		if err != nil {
			return err
		}
	}
	if len(pending) > 0 {
		_, err := cw.WriteRowValues(pending)
		return err
	}
	return nil
}

func copyPage(cw *parquet.ColumnWriter, p parquet.Page, ci int, repeated bool, buf []parquet.Value, pending *[]parquet.Value, feed *mergeFeed,
	keep []bool, row *int) error {
	vr := p.Values()
	for {
		n, rerr := vr.ReadValues(buf)
		vals := buf[:n]
		if keep != nil && !repeated {
			// One value per row: keep the kept rows' values, in place.
			k := 0
			for _, v := range vals {
				if keep[*row] {
					vals[k] = v
					k++
				}
				*row++
			}
			vals = vals[:k]
		}
		if !repeated {
			for i := range vals {
				feed.value(ci, vals[i])
			}
		}
		if !repeated && len(vals) > 0 {
			if _, err := cw.WriteRowValues(vals); err != nil {
				return err
			}
		}
		if repeated {
			for _, v := range vals {
				if keep != nil {
					if v.RepetitionLevel() == 0 {
						*row++
					}
					if !keep[*row-1] {
						continue
					}
				}
				feed.value(ci, v)
				if v.RepetitionLevel() == 0 && len(*pending) >= mergeChunk {
					if _, err := cw.WriteRowValues(*pending); err != nil {
						return err
					}
					*pending = (*pending)[:0]
				}
				*pending = append(*pending, v.Clone())
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// mergeFeed feeds a StatsCollector from rows of one file schema: per
// Parquet leaf column, the statistics column it feeds, if any.
type mergeFeed struct {
	leaves  []mergeLeaf             // by Parquet column index
	missing []*deltalog.ColumnStats // statistics columns the files lack
}

type mergeLeaf struct {
	st *deltalog.ColumnStats // nil: no statistics for this leaf
	// nullBelow: the value (the first of its row) is null when its
	// definition level is below this.
	nullBelow int
	// direct: the statistics column is this leaf itself (not the array or
	// map above it), so its values feed min/max.
	direct bool
	conv   mergeConv
	scale  int64 // timestamps: multiply to µs (>0) or divide (<0)
}

type mergeConv uint8

const (
	convNone mergeConv = iota
	convInt32
	convInt64
	convFloat
	convDouble
	convTimestamp
	convDecimal
	convString
)

func newMergeFeed(schema *parquet.Schema, stats *deltalog.StatsCollector) *mergeFeed {
	cols := schema.Columns()
	f := &mergeFeed{leaves: make([]mergeLeaf, len(cols))}
	for _, st := range stats.Columns() {
		found := false
		for i, path := range cols {
			if !hasPrefix(path, st.Path) || f.leaves[i].st != nil {
				continue
			}
			leaf, _ := schema.Lookup(path...)
			ml := mergeLeaf{st: st, direct: len(path) == len(st.Path)}
			if ml.direct {
				ml.nullBelow = leaf.MaxDefinitionLevel
				ml.conv, ml.scale = leafConv(st.Type, leaf.Node)
			} else {
				ml.nullBelow = definedAt(schema, st.Path)
			}
			f.leaves[i] = ml
			found = true
			break // one leaf per statistics column: an array's first leaf
		}
		if !found {
			f.missing = append(f.missing, st)
		}
	}
	return f
}

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// definedAt is the definition level at which the node at path is not null:
// the optional and repeated nodes from the root down to it.
func definedAt(schema *parquet.Schema, path []string) int {
	var n parquet.Node = schema
	level := 0
	for _, name := range path {
		for _, fld := range n.Fields() {
			if fld.Name() == name {
				n = fld
				break
			}
		}
		if n.Optional() || n.Repeated() {
			level++
		}
	}
	return level
}

// leafConv picks how a leaf's values become statistics for its Delta type.
func leafConv(t deltalog.DataType, n parquet.Node) (mergeConv, int64) {
	if _, ok := t.(deltalog.DecimalType); ok {
		return convDecimal, 0
	}
	switch t {
	case deltalog.TypeByte, deltalog.TypeShort, deltalog.TypeInteger, deltalog.TypeDate:
		return convInt32, 0
	case deltalog.TypeLong:
		return convInt64, 0
	case deltalog.TypeFloat:
		return convFloat, 0
	case deltalog.TypeDouble:
		return convDouble, 0
	case deltalog.TypeString:
		return convString, 0
	case deltalog.TypeTimestamp, deltalog.TypeTimestampNTZ:
		var ts *format.TimestampType
		if lt := n.Type().LogicalType(); lt != nil {
			ts, _ = lt.Value.(*format.TimestampType)
		}
		if n.Type().Kind() != parquet.Int64 || ts == nil || ts.Unit.Value == nil {
			return convNone, 0 // INT96 and the like: no min/max, only nulls
		}
		switch d := ts.Unit.Value.Duration(); {
		case d >= time.Microsecond:
			return convTimestamp, int64(d / time.Microsecond)
		default:
			return convTimestamp, -int64(time.Microsecond / d)
		}
	}
	return convNone, 0
}

// value feeds one value of column ci.
func (f *mergeFeed) value(ci int, v parquet.Value) {
	ml := &f.leaves[ci]
	if ml.st == nil || v.RepetitionLevel() != 0 {
		return
	}
	if v.DefinitionLevel() < ml.nullBelow {
		ml.st.ObserveNull()
		return
	}
	if !ml.direct {
		return
	}
	switch ml.conv {
	case convInt32:
		ml.st.ObserveInt(int64(v.Int32()))
	case convInt64:
		ml.st.ObserveInt(v.Int64())
	case convFloat:
		ml.st.ObserveFloat(float64(v.Float()))
	case convDouble:
		ml.st.ObserveFloat(v.Double())
	case convString:
		ml.st.ObserveString(string(v.ByteArray()))
	case convTimestamp:
		x := v.Int64()
		if ml.scale > 0 {
			x *= ml.scale
		} else {
			d := -ml.scale
			q := x / d
			if x%d != 0 && x < 0 {
				q--
			}
			x = q
		}
		ml.st.ObserveInt(x)
	case convDecimal:
		ml.st.ObserveDecimal(unscaled(v))
	}
}

// unscaled is a decimal value's unscaled integer, whatever its physical
// type: INT32, INT64, or big-endian two's complement bytes.
func unscaled(v parquet.Value) *big.Int {
	switch v.Kind() {
	case parquet.Int32:
		return big.NewInt(int64(v.Int32()))
	case parquet.Int64:
		return big.NewInt(v.Int64())
	}
	b := v.ByteArray()
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return x
}
