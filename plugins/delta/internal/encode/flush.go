package encode

import (
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Target describes the file Flush is about to write, so the caller can
// open its destination.
type Target struct {
	// Path is the file's location relative to the table root, unescaped:
	// Dir + the file name ("region=eu/part-00000-<uuid>-c000.snappy.parquet").
	// add.path is this path URI-encoded (deltalog.AddPath).
	Path string
	// Dir is the Hive-style partition directory with a trailing slash
	// ("region=eu/", "day=2026-09-03/hour=21/"), or "" for an unpartitioned
	// table. Names and values are escaped as Spark does;
	// null partition values are "__HIVE_DEFAULT_PARTITION__".
	Dir string
	// PartitionValues maps every partition column to its value serialized
	// per PROTOCOL.md "Partition Value Serialization"; nil is null. Empty
	// for an unpartitioned table (never nil).
	PartitionValues deltalog.PartitionValues
	// NumRecords is the number of records in the file.
	NumRecords int64
}

// File is one written data file: everything an add action needs besides
// modificationTime and dataChange.
type File struct {
	Target
	// Size is the file's length in bytes.
	Size int64
	// Stats is the add.stats JSON.
	Stats string
}

// OpenFunc returns the destination of a file. Flush writes the complete
// file to it and then, if it is an io.Closer, closes it; if writing fails
// the destination is left open for the caller to discard.
type OpenFunc func(t *Target) (io.Writer, error)

// Flush writes the buffered records as Parquet files, one per partition
// value tuple (one for an unpartitioned table), in the order partitions
// were first seen, and returns them in that order. On success the buffer is
// empty. On error the records stay buffered (call Reset to discard them, or
// Flush again); files already handed to open may exist and must not be
// committed. Flush with nothing buffered returns no files.
func (e *Encoder) Flush(open OpenFunc) ([]File, error) {
	if e.nrec == 0 {
		return nil, nil
	}
	var groups []*group
	if len(e.partNodes) == 0 {
		groups = []*group{{values: deltalog.PartitionValues{}}}
	} else {
		groups = e.groups
	}
	files := make([]File, 0, len(groups))
	for i, g := range groups {
		f, err := e.writeFile(i, g, open)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	e.Reset()
	return files, nil
}

// rows says which buffered records go to one file, in two forms:
// recs lists them (the slot of a record in a non-repeated column is its
// index), runs groups consecutive ones (repeated columns hold a slot range
// per record).
type rows struct {
	recs []int32
	runs []run
}

// run is a range of consecutive buffered records that go to the same file.
type run struct{ lo, hi int }

func (e *Encoder) fileRows(g *group) rows {
	recs := g.records
	if recs == nil {
		for len(e.allRecs) < e.nrec {
			e.allRecs = append(e.allRecs, int32(len(e.allRecs)))
		}
		recs = e.allRecs[:e.nrec]
	}
	runs := e.runs[:0]
	if len(e.repeated) > 0 {
		for _, r := range recs {
			if n := len(runs); n > 0 && runs[n-1].hi == int(r) {
				runs[n-1].hi++
			} else {
				runs = append(runs, run{int(r), int(r) + 1})
			}
		}
	}
	e.runs = runs
	return rows{recs: recs, runs: runs}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (e *Encoder) writeFile(i int, g *group, open OpenFunc) (File, error) {
	rs := e.fileRows(g)
	numRecords := len(rs.recs)
	t := Target{
		Path:            g.dir + e.opts.FileName(i),
		Dir:             g.dir,
		PartitionValues: g.values,
		NumRecords:      int64(numRecords),
	}
	w, err := open(&t)
	if err != nil {
		return File{}, err
	}
	cw := &countingWriter{w: w}
	e.pw.Reset(cw)
	e.stats.begin(numRecords)
	for ci, col := range e.pw.ColumnWriters() {
		if err := e.writeColumn(col, ci, e.cols[ci], rs); err != nil {
			return File{}, fmt.Errorf("encode: write column %v: %w", e.leaves[ci].path, err)
		}
		e.stats.column(ci, e.cols[ci], rs)
	}
	if err := e.pw.Close(); err != nil {
		return File{}, fmt.Errorf("encode: write parquet: %w", err)
	}
	if c, ok := w.(io.Closer); ok {
		if err := c.Close(); err != nil {
			return File{}, err
		}
	}
	// The Parquet writer keeps a reference to the destination until the
	// next Reset; drop it so the caller's writer can be collected.
	e.pw.Reset(io.Discard)

	stats, err := e.stats.end()
	if err != nil {
		return File{}, fmt.Errorf("encode: statistics: %w", err)
	}
	return File{Target: t, Size: cw.n, Stats: stats}, nil
}

// valueChunk is how many values go to the Parquet column writer at once.
const valueChunk = 1024

// writeColumn feeds a file's slots of column c to its Parquet column
// writer, in chunks of about valueChunk values that end on row boundaries
// (a row may not span two pages). A partitioned batch interleaves
// partitions, so a file's records are gathered from all over the buffer.
func (e *Encoder) writeColumn(cw *parquet.ColumnWriter, ci int, c *column, rs rows) error {
	vals := e.vals[:0]
	flush := func(min int) error {
		if len(vals) < min {
			return nil
		}
		_, err := cw.WriteRowValues(vals)
		vals = vals[:0]
		return err
	}
	if c.maxRep == 0 {
		for recs := rs.recs; len(recs) > 0; {
			n := min(len(recs), valueChunk)
			vals = gatherValues(vals, c, recs[:n], ci)
			recs = recs[n:]
			if err := flush(valueChunk); err != nil {
				return err
			}
		}
	} else {
		for _, r := range rs.runs {
			lo, _ := c.recordSlots(r.lo)
			_, hi := c.recordSlots(r.hi - 1)
			for lo < hi {
				end := min(hi, lo+valueChunk)
				for end < hi && c.reps[end] != 0 {
					end++
				}
				vals = appendValues(vals, c, lo, end, ci)
				lo = end
				if err := flush(valueChunk); err != nil {
					return err
				}
			}
		}
	}
	err := flush(1)
	clear(vals[:cap(vals)]) // drop references into column data
	e.vals = vals[:0]
	return err
}

// gatherValues appends the slots listed in idx of a non-repeated column.
func gatherValues(dst []parquet.Value, c *column, idx []int32, ci int) []parquet.Value {
	base := len(dst)
	dst = slices.Grow(dst, len(idx))[:base+len(idx)]
	vals := dst[base:]
	switch c.phys {
	case physInt64:
		for k, i := range idx {
			vals[k] = parquet.Int64Value(c.i64[i])
		}
	case physInt32:
		for k, i := range idx {
			vals[k] = parquet.Int32Value(c.i32[i])
		}
	case physDouble:
		for k, i := range idx {
			vals[k] = parquet.DoubleValue(c.f64[i])
		}
	case physFloat:
		for k, i := range idx {
			vals[k] = parquet.FloatValue(c.f32[i])
		}
	case physBool:
		for k, i := range idx {
			vals[k] = parquet.BooleanValue(c.bools[i])
		}
	case physBytes:
		for k, i := range idx {
			vals[k] = parquet.ByteArrayValue(c.bytesAt(int(i)))
		}
	case physFixed:
		w := c.width
		for k, i := range idx {
			j := int(i) * w
			vals[k] = parquet.FixedLenByteArrayValue(c.data[j : j+w : j+w])
		}
	}
	if c.maxDef > 0 {
		for k, i := range idx {
			vals[k].SetDefinitionLevel(int(c.defs[i]))
		}
	}
	for k := range vals {
		vals[k].SetColumnIndex(ci)
	}
	return dst
}

// appendValues appends slots [lo, hi) as Parquet values. Null slots carry
// a zero value; their definition level marks them null.
func appendValues(dst []parquet.Value, c *column, lo, hi, ci int) []parquet.Value {
	base := len(dst)
	dst = slices.Grow(dst, hi-lo)[:base+hi-lo]
	vals := dst[base:]
	switch c.phys {
	case physInt64:
		for k, v := range c.i64[lo:hi] {
			vals[k] = parquet.Int64Value(v)
		}
	case physInt32:
		for k, v := range c.i32[lo:hi] {
			vals[k] = parquet.Int32Value(v)
		}
	case physDouble:
		for k, v := range c.f64[lo:hi] {
			vals[k] = parquet.DoubleValue(v)
		}
	case physFloat:
		for k, v := range c.f32[lo:hi] {
			vals[k] = parquet.FloatValue(v)
		}
	case physBool:
		for k, v := range c.bools[lo:hi] {
			vals[k] = parquet.BooleanValue(v)
		}
	case physBytes:
		start := uint32(0)
		if lo > 0 {
			start = c.ends[lo-1]
		}
		for k, end := range c.ends[lo:hi] {
			vals[k] = parquet.ByteArrayValue(c.data[start:end:end])
			start = end
		}
	case physFixed:
		w := c.width
		for k := range vals {
			i := lo + k
			vals[k] = parquet.FixedLenByteArrayValue(c.data[i*w : (i+1)*w : (i+1)*w])
		}
	}
	// SetDefinitionLevel and friends mutate in place and inline; Value.Level
	// copies the 24-byte value twice per call and was 15% of Flush.
	if c.maxDef > 0 {
		for k, d := range c.defs[lo:hi] {
			vals[k].SetDefinitionLevel(int(d))
		}
	}
	if c.maxRep > 0 {
		for k, r := range c.reps[lo:hi] {
			vals[k].SetRepetitionLevel(int(r))
		}
	}
	for k := range vals {
		vals[k].SetColumnIndex(ci)
	}
	return dst
}
