package ckptfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/format"
)

// Encoder writes checkpoint rows with parquet-go into an in-memory Parquet
// file, which it returns whole (Close) or as encoded row groups and a
// footer (Finish) for Assemble to put together with others. It is reused
// from one file to the next while the schema holds (Start): the same
// Parquet schema, options and created_by.
//
// Every file has one encoding: snappy, PLAIN v1 data pages and no
// dictionary (so a column chunk of several pages, appended by
// Encoder.Append, is plain Parquet), no page statistics (they duplicate
// the column chunk's and cost a second pass over every value), and row
// groups only where the caller cuts them.
type Encoder struct {
	ctx    context.Context
	s      *Schema
	types  []parquet.Type // per leaf column
	pw     *parquet.GenericWriter[any]
	buf    bytes.Buffer
	row    Row
	flat   []parquet.Value
	ends   []int
	batch  []parquet.Row
	cuts   []int64 // rows of each row group cut so far
	open   int64   // rows since the last cut
	groups []RowGroup
}

// NewEncoder returns an encoder of files of schema s whose footer names
// createdBy as their writer.
func NewEncoder(s *Schema, createdBy string) *Encoder {
	e := &Encoder{s: s}
	wopts := []parquet.WriterOption{s.schema,
		parquet.Compression(&snappy.Codec{}),
		parquet.DataPageVersion(1),
		parquet.CreatedBy(createdBy, "", ""),
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain),
		parquet.MaxRowsPerRowGroup(math.MaxInt64), // cut explicitly
		parquet.PageBufferSize(256 << 10),
	}
	for _, path := range s.schema.Columns() {
		wopts = append(wopts, parquet.SkipPageStatistics(path...))
		leaf, _ := s.schema.Lookup(path...)
		e.types = append(e.types, leaf.Node.Type())
	}
	e.pw = parquet.NewGenericWriter[any](&e.buf, wopts...)
	return e
}

// Start starts a new file of s, whose Parquet schema must be the
// encoder's (s's fields are the ones the caller fills rows with). A
// canceled ctx stops the file at its next batch of rows.
func (e *Encoder) Start(ctx context.Context, s *Schema) {
	e.ctx, e.s = ctx, s
	e.buf.Reset()
	e.pw.Reset(&e.buf)
	e.cuts, e.open = e.cuts[:0], 0
	e.flat, e.ends = e.flat[:0], e.ends[:0]
}

// flush hands the staged rows to the writer. Rows are staged in one flat
// buffer and cut into row slices only here, when it no longer moves.
func (e *Encoder) flush() error {
	if len(e.ends) == 0 {
		return nil
	}
	e.batch = e.batch[:0]
	start := 0
	for _, end := range e.ends {
		e.batch = append(e.batch, e.flat[start:end:end])
		start = end
	}
	if _, err := e.pw.WriteRows(e.batch); err != nil {
		return fmt.Errorf("deltalog: write checkpoint: %w", err)
	}
	e.flat, e.ends = e.flat[:0], e.ends[:0]
	return e.ctx.Err()
}

// Begin starts a row of the top-level field target (the row's action):
// nulls for the top-level fields before it. The caller then fills
// target's fields, in order, and calls End.
func (e *Encoder) Begin(target *Field) *Row {
	r := &e.row
	r.vals = r.vals[:0]
	for _, k := range e.s.top {
		if k == target {
			break
		}
		r.Null(k)
	}
	return r
}

// End closes the row Begin started: nulls for the top-level fields after
// target.
func (e *Encoder) End(target *Field) error {
	r := &e.row
	after := false
	for _, k := range e.s.top {
		if after {
			r.Null(k)
		}
		after = after || k == target
	}
	if len(r.vals) < e.s.ncols {
		return fmt.Errorf("deltalog: internal error: checkpoint row has %d values for %d columns", len(r.vals), e.s.ncols)
	}
	e.flat = append(e.flat, r.vals...)
	e.ends = append(e.ends, len(e.flat))
	e.open++
	if len(e.ends) >= 1024 {
		return e.flush()
	}
	return nil
}

// Cut ends the current row group (nothing when it has no rows).
func (e *Encoder) Cut() error {
	if e.open == 0 {
		return nil
	}
	if err := e.flush(); err != nil {
		return err
	}
	if err := e.pw.Flush(); err != nil {
		return fmt.Errorf("deltalog: write checkpoint: %w", err)
	}
	e.cuts = append(e.cuts, e.open)
	e.open = 0
	return nil
}

// Close ends the file and returns a copy of its bytes (the encoder's
// buffer is reused).
func (e *Encoder) Close() ([]byte, error) {
	if err := e.Cut(); err != nil {
		return nil, err
	}
	if err := e.pw.Close(); err != nil {
		return nil, fmt.Errorf("deltalog: write checkpoint: %w", err)
	}
	if !bytes.HasSuffix(e.buf.Bytes(), []byte("PAR1")) {
		return nil, errors.New("deltalog: internal error: parquet-go wrote no Parquet trailer")
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// Footer is the footer of a file an Encoder finished: its schema and
// file-level fields, for Assemble.
type Footer struct{ md *format.FileMetaData }

// FooterOf is the footer md of a file read back, for Assemble: compaction
// splices the row groups of the sink's own data files under it.
func FooterOf(md *format.FileMetaData) Footer { return Footer{md} }

// Finish ends the file and returns its row groups (one per cut, their
// pages copied out of the encoder's buffer) and its footer. The slice is
// the encoder's, valid until its next Finish: keep the RowGroup values,
// not the slice.
func (e *Encoder) Finish() ([]RowGroup, Footer, error) {
	if err := e.Cut(); err != nil {
		return nil, Footer{}, err
	}
	if err := e.pw.Close(); err != nil {
		return nil, Footer{}, fmt.Errorf("deltalog: write checkpoint: %w", err)
	}
	md, err := DecodeFooter(e.buf.Bytes())
	if err != nil {
		return nil, Footer{}, fmt.Errorf("deltalog: internal error: reading back the footer parquet-go wrote: %w", err)
	}
	if len(md.RowGroups) != len(e.cuts) {
		return nil, Footer{}, fmt.Errorf("deltalog: internal error: %d row groups for %d cuts", len(md.RowGroups), len(e.cuts))
	}
	e.groups = e.groups[:0]
	for i := range md.RowGroups {
		g, err := e.rowGroup(&md.RowGroups[i], e.cuts[i])
		if err != nil {
			return nil, Footer{}, fmt.Errorf("deltalog: internal error: row group %d: %w", i, err)
		}
		e.groups = append(e.groups, g)
	}
	md.RowGroups = nil
	return e.groups, Footer{md}, nil
}

// rowGroup copies the pages of one row group of the file in the encoder's
// buffer (rows, as cut) into one allocation holding its column chunks back
// to back, and keeps nothing else of the buffer, which the next file
// reuses.
func (e *Encoder) rowGroup(rg *format.RowGroup, rows int64) (RowGroup, error) {
	if rg.NumRows != rows || len(rg.Columns) != len(e.types) {
		return RowGroup{}, fmt.Errorf("%d rows and %d columns, expected %d and %d",
			rg.NumRows, len(rg.Columns), rows, len(e.types))
	}
	data := e.buf.Bytes()
	var total int64
	for j := range rg.Columns {
		total += rg.Columns[j].MetaData.TotalCompressedSize
	}
	own := make([]byte, 0, total)
	g := RowGroup{Rows: rg.NumRows, Cols: make([]Chunk, len(rg.Columns)), Size: total}
	for j := range rg.Columns {
		m := rg.Columns[j].MetaData
		if m.DictionaryPageOffset != 0 || slices.ContainsFunc(m.EncodingStats, func(s format.PageEncodingStats) bool {
			return s.PageType != format.DataPage
		}) {
			return RowGroup{}, fmt.Errorf("column %v has pages other than v1 data pages", m.PathInSchema)
		}
		lo, hi := m.DataPageOffset, m.DataPageOffset+m.TotalCompressedSize
		if lo < 4 || hi > int64(len(data)) {
			return RowGroup{}, fmt.Errorf("column chunk at %d..%d", lo, hi)
		}
		start := len(own)
		own = append(own, data[lo:hi]...)
		m.Statistics = format.Statistics{NullCount: m.Statistics.NullCount,
			Min: bytes.Clone(m.Statistics.Min), Max: bytes.Clone(m.Statistics.Max),
			MinValue: bytes.Clone(m.Statistics.MinValue), MaxValue: bytes.Clone(m.Statistics.MaxValue)}
		m.SizeStatistics.RepetitionLevelHistogram = slices.Clone(m.SizeStatistics.RepetitionLevelHistogram)
		m.SizeStatistics.DefinitionLevelHistogram = slices.Clone(m.SizeStatistics.DefinitionLevelHistogram)
		m.EncodingStats = slices.Clone(m.EncodingStats)
		m.Encoding = slices.Clone(m.Encoding)
		m.DataPageOffset, m.IndexPageOffset, m.BloomFilterOffset, m.BloomFilterLength = 0, 0, 0, 0
		g.Cols[j] = Chunk{Pages: [][]byte{own[start:len(own):len(own)]}, MD: m}
	}
	return g, nil
}

// Append appends b's pages to g's column chunks (both encoded by e, or by
// an encoder of the same schema): the rows of b follow g's in the same row
// group.
func (e *Encoder) Append(g, b *RowGroup) { g.Append(b, e.types) }
