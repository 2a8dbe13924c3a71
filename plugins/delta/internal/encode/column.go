package encode

import "github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"

// phys is how a leaf column stores its values.
type phys uint8

const (
	physBool phys = iota + 1
	physInt32
	physInt64
	physFloat
	physDouble
	physBytes // string, binary
	physFixed // decimal with precision > 18, big-endian two's complement
)

func physOf(n *node) phys {
	switch n.kind {
	case kBool:
		return physBool
	case kByte, kShort, kInt, kDate:
		return physInt32
	case kLong, kTimestamp, kTimestampNTZ:
		return physInt64
	case kFloat:
		return physFloat
	case kDouble:
		return physDouble
	case kString, kBinary:
		return physBytes
	case kDecimal:
		switch {
		case n.precision <= 9:
			return physInt32
		case n.precision <= 18:
			return physInt64
		}
		return physFixed
	}
	panic("encode: no physical type for " + n.kind.String())
}

// column buffers one Parquet leaf column for the whole batch. Storage is
// slot-aligned: every slot (a value or a null at some level) has an entry in
// the value slice, so a record's values are a contiguous slot range and a
// partitioned batch can be split into files without an index per value.
// Null slots hold the zero value.
type column struct {
	phys   phys
	maxDef uint8
	maxRep uint8
	width  int // physFixed byte width

	defs []uint8 // per slot, only when maxDef > 0
	reps []uint8 // per slot, only when maxRep > 0

	bools []bool
	i32   []int32
	i64   []int64
	f32   []float32
	f64   []float64
	data  []byte   // physBytes values back to back; physFixed: width bytes per slot
	ends  []uint32 // physBytes: end offset of each slot's value in data

	// recStart holds, for repeated columns, each buffered record's first
	// slot, plus the end of the last one appended when a record completes.
	// Non-repeated columns have exactly one slot per record.
	recStart []int32
}

func newColumn(li *leafInfo) *column {
	c := &column{phys: physOf(li.node), maxDef: li.maxDef, maxRep: li.maxRep}
	if c.phys == physFixed {
		c.width = ckptfile.DecimalWidth(li.node.precision)
	}
	return c
}

// slots is the number of buffered slots.
func (c *column) slots() int {
	switch c.phys {
	case physBool:
		return len(c.bools)
	case physInt32:
		return len(c.i32)
	case physInt64:
		return len(c.i64)
	case physFloat:
		return len(c.f32)
	case physDouble:
		return len(c.f64)
	case physBytes:
		return len(c.ends)
	default:
		return len(c.data) / c.width
	}
}

func (c *column) levels(def, rep uint8) {
	if c.maxDef > 0 {
		c.defs = append(c.defs, def)
	}
	if c.maxRep > 0 {
		c.reps = append(c.reps, rep)
	}
}

// null appends a null slot with the given definition level.
func (c *column) null(def, rep uint8) {
	c.levels(def, rep)
	switch c.phys {
	case physBool:
		c.bools = append(c.bools, false)
	case physInt32:
		c.i32 = append(c.i32, 0)
	case physInt64:
		c.i64 = append(c.i64, 0)
	case physFloat:
		c.f32 = append(c.f32, 0)
	case physDouble:
		c.f64 = append(c.f64, 0)
	case physBytes:
		c.ends = append(c.ends, uint32(len(c.data)))
	default:
		for range c.width {
			c.data = append(c.data, 0)
		}
	}
}

func (c *column) putBool(v bool, rep uint8) {
	c.levels(c.maxDef, rep)
	c.bools = append(c.bools, v)
}

func (c *column) putInt32(v int32, rep uint8) {
	c.levels(c.maxDef, rep)
	c.i32 = append(c.i32, v)
}

func (c *column) putInt64(v int64, rep uint8) {
	c.levels(c.maxDef, rep)
	c.i64 = append(c.i64, v)
}

func (c *column) putFloat(v float32, rep uint8) {
	c.levels(c.maxDef, rep)
	c.f32 = append(c.f32, v)
}

func (c *column) putDouble(v float64, rep uint8) {
	c.levels(c.maxDef, rep)
	c.f64 = append(c.f64, v)
}

// endBytes closes a byte-array slot whose value the caller appended to
// c.data.
func (c *column) endBytes(rep uint8) {
	c.levels(c.maxDef, rep)
	c.ends = append(c.ends, uint32(len(c.data)))
}

// putFixed appends a big-endian two's complement value of c.width bytes
// from a 128-bit magnitude and sign.
func (c *column) putFixed(hi, lo uint64, neg bool, rep uint8) {
	c.levels(c.maxDef, rep)
	if neg {
		hi, lo = neg128(hi, lo)
	}
	for i := c.width - 1; i >= 0; i-- {
		var b byte
		if i >= 8 {
			b = byte(hi >> (8 * (i - 8)))
		} else {
			b = byte(lo >> (8 * i))
		}
		c.data = append(c.data, b)
	}
}

// bytesAt returns slot i of a physBytes column (capacity cut, so an
// append cannot write into the next value).
func (c *column) bytesAt(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = c.ends[i-1]
	}
	end := c.ends[i]
	return c.data[start:end:end]
}

// truncate drops every slot from n on.
func (c *column) truncate(n int) {
	if c.maxDef > 0 {
		c.defs = c.defs[:n]
	}
	if c.maxRep > 0 {
		c.reps = c.reps[:n]
	}
	switch c.phys {
	case physBool:
		c.bools = c.bools[:n]
	case physInt32:
		c.i32 = c.i32[:n]
	case physInt64:
		c.i64 = c.i64[:n]
	case physFloat:
		c.f32 = c.f32[:n]
	case physDouble:
		c.f64 = c.f64[:n]
	case physBytes:
		c.ends = c.ends[:n]
		if n == 0 {
			c.data = c.data[:0]
		} else {
			c.data = c.data[:c.ends[n-1]]
		}
	default:
		c.data = c.data[:n*c.width]
	}
}

// reset empties the column, keeping its memory for the next batch.
func (c *column) reset() {
	c.truncate(0)
	c.recStart = c.recStart[:0]
}

// recordSlots returns the slot range of buffered record r.
func (c *column) recordSlots(r int) (int, int) {
	if c.maxRep == 0 {
		return r, r + 1
	}
	return int(c.recStart[r]), int(c.recStart[r+1])
}

// bufferedBytes estimates the memory the column's values occupy.
func (c *column) bufferedBytes() int {
	return len(c.defs) + len(c.reps) + len(c.bools) + 4*len(c.i32) + 8*len(c.i64) +
		4*len(c.f32) + 8*len(c.f64) + len(c.data) + 4*len(c.ends)
}
