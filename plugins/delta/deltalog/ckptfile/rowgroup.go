package ckptfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// RowGroup is one encoded row group: per leaf column the bytes of its
// pages and its column chunk metadata (offsets are set when a file is put
// together by Assemble).
type RowGroup struct {
	Rows int64
	Cols []Chunk
	Size int64 // page bytes
}

// Chunk is one column chunk of a RowGroup: its pages, encoded, and its
// metadata.
type Chunk struct {
	Pages [][]byte
	MD    format.ColumnMetaData
}

// PageSets is how many runs of pages (an encoded group and those appended
// to it) each of g's column chunks holds.
func (g *RowGroup) PageSets() int {
	if len(g.Cols) == 0 {
		return 0
	}
	return len(g.Cols[0].Pages)
}

// Append appends b's pages to g's column chunks: the rows of b follow g's
// in the same row group. types are the columns' Parquet types.
func (g *RowGroup) Append(b *RowGroup, types []parquet.Type) {
	for j := range g.Cols {
		a, n := &g.Cols[j], &b.Cols[j]
		a.Pages = append(a.Pages, n.Pages...)
		mergeChunkMeta(&a.MD, &n.MD, types[j])
	}
	g.Rows += b.Rows
	g.Size += b.Size
}

// mergeChunkMeta folds the metadata of column chunk n into a, as if n's
// pages had been written after a's by one writer.
func mergeChunkMeta(a, n *format.ColumnMetaData, typ parquet.Type) {
	aVals := a.NumValues - a.Statistics.NullCount
	nVals := n.NumValues - n.Statistics.NullCount
	a.NumValues += n.NumValues
	a.TotalUncompressedSize += n.TotalUncompressedSize
	a.TotalCompressedSize += n.TotalCompressedSize
	for _, e := range n.Encoding {
		if !slices.Contains(a.Encoding, e) {
			a.Encoding = append(a.Encoding, e)
		}
	}
	for _, s := range n.EncodingStats {
		i := slices.IndexFunc(a.EncodingStats, func(x format.PageEncodingStats) bool {
			return x.PageType == s.PageType && x.Encoding == s.Encoding
		})
		if i < 0 {
			a.EncodingStats = append(a.EncodingStats, s)
		} else {
			a.EncodingStats[i].Count += s.Count
		}
	}
	sa, sn := &a.Statistics, &n.Statistics
	sa.NullCount += sn.NullCount
	sa.DistinctCount = 0
	switch {
	case nVals <= 0: // n has no values: a's bounds stand
	case aVals <= 0:
		sa.MinValue, sa.MaxValue, sa.Min, sa.Max = sn.MinValue, sn.MaxValue, sn.Min, sn.Max
	case sa.MinValue == nil || sa.MaxValue == nil || sn.MinValue == nil || sn.MaxValue == nil:
		// A side without bounds: the merged chunk has none (readers then
		// cannot skip it, which is always correct).
		sa.MinValue, sa.MaxValue, sa.Min, sa.Max = nil, nil, nil, nil
	default:
		k := typ.Kind()
		if typ.Compare(k.Value(sn.MinValue), k.Value(sa.MinValue)) < 0 {
			sa.MinValue = sn.MinValue
		}
		if typ.Compare(k.Value(sn.MaxValue), k.Value(sa.MaxValue)) > 0 {
			sa.MaxValue = sn.MaxValue
		}
		if sa.Min != nil || sa.Max != nil {
			sa.Min, sa.Max = sa.MinValue, sa.MaxValue
		}
	}
	ss, ns := &a.SizeStatistics, &n.SizeStatistics
	ss.UnencodedByteArrayDataBytes += ns.UnencodedByteArrayDataBytes
	ss.RepetitionLevelHistogram = addHistogram(ss.RepetitionLevelHistogram, ns.RepetitionLevelHistogram)
	ss.DefinitionLevelHistogram = addHistogram(ss.DefinitionLevelHistogram, ns.DefinitionLevelHistogram)
}

func addHistogram(a, b []int64) []int64 {
	if len(a) != len(b) {
		return nil // shapes differ: leave the optional histogram out
	}
	for i := range a {
		a[i] += b[i]
	}
	return a
}

// Assemble puts a Parquet file together from encoded row groups: the magic,
// every group's pages, and a footer with f's schema and file fields.
// The file is appended to out, which it replaces when too small.
func Assemble(out []byte, f Footer, groups []*RowGroup) ([]byte, error) {
	var total int64 = 8
	for _, g := range groups {
		total += g.Size
	}
	if need := int(total) + 64<<10; cap(out) < need {
		out = make([]byte, 0, need+need/8)
	}
	out = append(out[:0], "PAR1"...)
	meta := *f.md
	meta.NumRows = 0
	meta.RowGroups = make([]format.RowGroup, 0, len(groups))
	for _, g := range groups {
		if g.Rows == 0 {
			continue
		}
		rg := format.RowGroup{Columns: make([]format.ColumnChunk, len(g.Cols)), NumRows: g.Rows,
			FileOffset: int64(len(out)), Ordinal: int16(len(meta.RowGroups))}
		for j := range g.Cols {
			ch := &g.Cols[j]
			m := ch.MD
			m.DataPageOffset = int64(len(out))
			for _, p := range ch.Pages {
				out = append(out, p...)
			}
			if int64(len(out))-m.DataPageOffset != m.TotalCompressedSize {
				return nil, fmt.Errorf("deltalog: internal error: column %v holds %d bytes, its metadata says %d",
					m.PathInSchema, int64(len(out))-m.DataPageOffset, m.TotalCompressedSize)
			}
			rg.Columns[j] = format.ColumnChunk{MetaData: m}
			rg.TotalByteSize += m.TotalUncompressedSize
			rg.TotalCompressedSize += m.TotalCompressedSize
		}
		meta.RowGroups = append(meta.RowGroups, rg)
		meta.NumRows += g.Rows
	}
	if len(meta.RowGroups) > math.MaxInt16 {
		return nil, fmt.Errorf("deltalog: checkpoint would have %d row groups", len(meta.RowGroups))
	}
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), &meta)
	if err != nil {
		return nil, fmt.Errorf("deltalog: write checkpoint footer: %w", err)
	}
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...), nil
}

// DecodeFooter decodes the footer of a whole Parquet file: Assemble's
// framing read back.
func DecodeFooter(data []byte) (*format.FileMetaData, error) {
	if len(data) < 12 || string(data[:4]) != "PAR1" || string(data[len(data)-4:]) != "PAR1" {
		return nil, errors.New("deltalog: not a Parquet file")
	}
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	if n > len(data)-12 {
		return nil, fmt.Errorf("deltalog: Parquet footer length %d", n)
	}
	md := new(format.FileMetaData)
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), data[len(data)-8-n:len(data)-8], md); err != nil {
		return nil, fmt.Errorf("deltalog: Parquet footer: %w", err)
	}
	return md, nil
}
