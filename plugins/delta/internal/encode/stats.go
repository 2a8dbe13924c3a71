package encode

import (
	"bytes"
	"math"
	"math/big"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Per-file statistics for add.stats come from deltalog.StatsCollector, the
// project's one implementation of Delta's rules (column selection by
// delta.dataSkippingStatsColumns / delta.dataSkippingNumIndexedCols, string
// prefixes, timestamp precision, JSON shape). The encoder only feeds it,
// straight from the column buffers while a file is written: typed values,
// no per-value allocation, no reading back of Parquet footers.

// statsFeed maps the collector's indexed columns to the encoder's buffers.
type statsFeed struct {
	coll  *deltalog.StatsCollector
	cols  []statsCol
	byCol [][]int // buffer index -> indexes into cols fed from it
	void  []int   // indexes into cols of void columns

	big, mod big.Int // scratch for wide decimals
}

type statsCol struct {
	cs   *deltalog.ColumnStats
	kind kind
	// col is the buffer the column is fed from; -1 for a void column,
	// which is never written and is null in every record.
	col int
	// nullDef: a slot is null when its definition level is below this.
	nullDef uint8
	// rowLevel: an array or map, counted null per record (not per element)
	// from its first leaf.
	rowLevel bool
	// values: min/max are collected (numbers, decimals, dates, timestamps,
	// strings), so non-null values are fed too.
	values bool
	width  int // physFixed
}

func newStatsFeed(schema *deltalog.StructType, partitionCols []string, root *node, cols []*column, opts Options) (*statsFeed, error) {
	coll, err := deltalog.NewStatsCollectorFor(schema, partitionCols, opts.Configuration, opts.ExtraStatsColumns)
	if err != nil {
		return nil, err
	}
	f := &statsFeed{coll: coll}
	for _, cs := range coll.Columns() {
		sc := statsCol{cs: cs, col: -1}
		if n := lookupPath(root, cs.Path); n != nil {
			sc.kind = n.kind
			sc.col = n.leaves[0]
			sc.nullDef = n.def
			switch n.kind {
			case kArray, kMap:
				sc.rowLevel = true
			case kBool, kBinary, kStruct:
			default:
				sc.values = true
				sc.width = cols[sc.col].width
			}
		}
		if sc.col < 0 {
			f.void = append(f.void, len(f.cols))
		} else {
			for len(f.byCol) <= sc.col {
				f.byCol = append(f.byCol, nil)
			}
			f.byCol[sc.col] = append(f.byCol[sc.col], len(f.cols))
		}
		f.cols = append(f.cols, sc)
	}
	return f, nil
}

// lookupPath follows struct fields by name; nil when the path ends at a
// field the encoder does not store (void).
func lookupPath(root *node, path []string) *node {
	n := root
	for _, name := range path {
		if n.kind != kStruct {
			return nil
		}
		i, ok := n.byName[name]
		if !ok {
			return nil
		}
		n = n.fields[i]
	}
	if n == root {
		return nil
	}
	return n
}

// begin starts a file's statistics.
func (f *statsFeed) begin(numRecords int) {
	f.coll.Reset()
	f.coll.AddRows(int64(numRecords))
	for _, i := range f.void {
		for range numRecords {
			f.cols[i].cs.ObserveNull()
		}
	}
}

// column feeds the statistics computed from buffer col, if any. Flush
// calls it right after writing that column, while its values are still in
// the CPU cache.
func (f *statsFeed) column(col int, c *column, rs rows) {
	if col >= len(f.byCol) {
		return
	}
	for _, i := range f.byCol[col] {
		f.feed(&f.cols[i], c, rs)
	}
}

// end renders the file's add.stats.
func (f *statsFeed) end() (string, error) { return f.coll.JSON() }

// extremes tracks a column's smallest and largest value over a file.
type extremes struct {
	seen       bool
	imin, imax int64
	fmin, fmax float64
	bmin, bmax []byte // views into the column buffer
	nulls      int64
}

// feed observes the slots of the given runs of column c. Nulls are counted;
// of the values, only the extremes are handed to the collector (it keeps
// nothing but min and max), so deltalog is called twice per column and
// file, not once per value.
func (f *statsFeed) feed(sc *statsCol, c *column, rs rows) {
	var x extremes
	if sc.rowLevel {
		// arrays and maps: null when the first slot of the record says so
		for _, r := range rs.runs {
			lo, _ := c.recordSlots(r.lo)
			_, hi := c.recordSlots(r.hi - 1)
			for i := lo; i < hi; i++ {
				if c.defs[i] < sc.nullDef && c.reps[i] == 0 {
					x.nulls++
				}
			}
		}
	} else {
		f.scan(&x, sc, c, rs.recs) // not repeated: slot = record
	}
	cs := sc.cs
	for range x.nulls {
		cs.ObserveNull()
	}
	if !x.seen {
		return
	}
	switch c.phys {
	case physInt32, physInt64:
		if sc.kind == kDecimal {
			// deltalog renders decimals from ObserveDecimal only.
			for _, v := range [2]int64{x.imin, x.imax} {
				f.big.SetInt64(v)
				cs.ObserveDecimal(&f.big) // copies
			}
			return
		}
		cs.ObserveInt(x.imin)
		cs.ObserveInt(x.imax)
	case physDouble, physFloat:
		cs.ObserveFloat(x.fmin)
		cs.ObserveFloat(x.fmax)
	case physBytes:
		// The collector keeps these strings, which view the buffer; they
		// are rendered before the buffer changes.
		cs.ObserveString(bstr(x.bmin))
		cs.ObserveString(bstr(x.bmax))
	case physFixed:
		f.mod.Lsh(big.NewInt(1), uint(8*sc.width))
		for _, v := range [2][]byte{x.bmin, x.bmax} {
			f.big.SetBytes(v)
			if v[0]&0x80 != 0 {
				f.big.Sub(&f.big, &f.mod)
			}
			cs.ObserveDecimal(&f.big) // copies
		}
	}
}

// scan updates x with the listed slots of a non-repeated column.
func (f *statsFeed) scan(x *extremes, sc *statsCol, c *column, idx []int32) {
	defs := c.defs
	null := func(i int32) bool {
		if c.maxDef > 0 && defs[i] < sc.nullDef {
			x.nulls++
			return true
		}
		return false
	}
	if !sc.values {
		for _, i := range idx {
			null(i)
		}
		return
	}
	switch c.phys {
	case physInt32, physInt64:
		for _, i := range idx {
			if null(i) {
				continue
			}
			var v int64
			if c.phys == physInt32 {
				v = int64(c.i32[i])
			} else {
				v = c.i64[i]
			}
			if !x.seen {
				x.imin, x.imax, x.seen = v, v, true
			} else if v < x.imin {
				x.imin = v
			} else if v > x.imax {
				x.imax = v
			}
		}
	case physDouble, physFloat:
		for _, i := range idx {
			if null(i) {
				continue
			}
			var v float64
			if c.phys == physDouble {
				v = c.f64[i]
			} else {
				v = float64(c.f32[i])
			}
			if v != v || v > math.MaxFloat64 || v < -math.MaxFloat64 {
				sc.cs.ObserveFloat(v) // NaN, ±Inf: the collector's business
				continue
			}
			if !x.seen {
				x.fmin, x.fmax, x.seen = v, v, true
			} else if v < x.fmin {
				x.fmin = v
			} else if v > x.fmax {
				x.fmax = v
			}
		}
	case physBytes:
		for _, i := range idx {
			if null(i) {
				continue
			}
			v := c.bytesAt(int(i))
			if !x.seen {
				x.bmin, x.bmax, x.seen = v, v, true
			} else if less(v, x.bmin) {
				x.bmin = v
			} else if less(x.bmax, v) {
				x.bmax = v
			}
		}
	case physFixed:
		w := sc.width
		for _, i := range idx {
			if null(i) {
				continue
			}
			v := c.data[int(i)*w : int(i+1)*w]
			if !x.seen {
				x.bmin, x.bmax, x.seen = v, v, true
			} else if lessSigned(v, x.bmin) {
				x.bmin = v
			} else if lessSigned(x.bmax, v) {
				x.bmax = v
			}
		}
	}
}

// less is bytes.Compare(a, b) < 0 with the usual case, different first
// bytes, decided inline.
func less(a, b []byte) bool {
	if len(a) > 0 && len(b) > 0 && a[0] != b[0] {
		return a[0] < b[0]
	}
	return bytes.Compare(a, b) < 0
}

// lessSigned compares equal-width big-endian two's complement integers.
func lessSigned(a, b []byte) bool {
	if na, nb := a[0]&0x80 != 0, b[0]&0x80 != 0; na != nb {
		return na
	}
	return bytes.Compare(a, b) < 0
}
