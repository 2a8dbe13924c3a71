package encode

import (
	"encoding/binary"
	"math"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// group is one partition of a batch: the records that become one file.
type group struct {
	values  deltalog.PartitionValues
	dir     string
	records []int32 // buffered record indices, ascending
}

// groupOf finds (or creates) the group of buffered record r from its
// partition values. The lookup key is the raw typed values, so the common
// case (a partition seen before) serializes nothing and allocates nothing;
// a new group's values are serialized by deltalog (PROTOCOL.md "Partition
// Value Serialization") and its directory built by deltalog.PartitionDir.
func (e *Encoder) groupOf(r int) (int32, *valueError) {
	key := e.keyBuf[:0]
	for p, n := range e.partNodes {
		c := e.cols[e.nFile+p]
		if c.maxDef > 0 && c.defs[r] == 0 {
			key = append(key, 0)
			continue
		}
		switch c.phys {
		case physBytes:
			v := c.bytesAt(r)
			if len(v) == 0 {
				// PROTOCOL.md: an empty string is a null partition value.
				if !n.nullable {
					e.keyBuf = key
					return 0, valueErr(ErrNull, "empty string in non-nullable partition column (an empty partition value is null)").field(n.name)
				}
				key = append(key, 0)
				continue
			}
			key = append(key, 1)
			key = binary.AppendUvarint(key, uint64(len(v)))
			key = append(key, v...)
		case physBool:
			key = append(key, 1)
			if c.bools[r] {
				key = append(key, 1)
			} else {
				key = append(key, 0)
			}
		case physInt32:
			key = binary.LittleEndian.AppendUint32(append(key, 1), uint32(c.i32[r]))
		case physInt64:
			key = binary.LittleEndian.AppendUint64(append(key, 1), uint64(c.i64[r]))
		case physFloat:
			key = binary.LittleEndian.AppendUint32(append(key, 1), math.Float32bits(c.f32[r]))
		case physDouble:
			key = binary.LittleEndian.AppendUint64(append(key, 1), math.Float64bits(c.f64[r]))
		case physFixed:
			key = append(append(key, 1), c.data[r*c.width:(r+1)*c.width]...)
		}
	}
	e.keyBuf = key
	if g, ok := e.groupIdx[string(key)]; ok {
		e.groups[g].records = append(e.groups[g].records, int32(r))
		return g, nil
	}
	g := &group{values: make(deltalog.PartitionValues, len(e.partNodes))}
	for p, n := range e.partNodes {
		v, err := deltalog.SerializePartitionValue(n.dtype, e.partitionValue(p, r))
		if err != nil {
			e.keyBuf = key
			return 0, valueErr(ErrUnparsable, "invalid partition value: "+err.Error()).field(n.name)
		}
		g.values[e.partNames[p]] = v
	}
	dir, err := deltalog.PartitionDir(e.partNames, g.values)
	if err != nil {
		return 0, valueErr(ErrUnparsable, err.Error())
	}
	g.dir = dir
	g.records = append(g.records, int32(r))
	id := int32(len(e.groups))
	e.groups = append(e.groups, g)
	e.groupIdx[string(key)] = id
	return id, nil
}

// partitionValue returns partition column p of record r as the Go value
// deltalog.SerializePartitionValue takes: nil for null, int64 for integer
// types, dates (days) and timestamps (microseconds), the exact decimal text
// for decimals.
func (e *Encoder) partitionValue(p, r int) any {
	n := e.partNodes[p]
	c := e.cols[e.nFile+p]
	if c.maxDef > 0 && c.defs[r] == 0 {
		return nil
	}
	switch n.kind {
	case kString:
		return string(c.bytesAt(r))
	case kBinary:
		return c.bytesAt(r)
	case kBool:
		return c.bools[r]
	case kByte, kShort, kInt, kDate:
		return int64(c.i32[r])
	case kLong, kTimestamp, kTimestampNTZ:
		return c.i64[r]
	case kFloat:
		return c.f32[r]
	case kDouble:
		return c.f64[r]
	case kDecimal:
		var neg bool
		var hi, lo uint64
		switch c.phys {
		case physInt32:
			neg, hi, lo = decimalFromInt64(int64(c.i32[r]))
		case physInt64:
			neg, hi, lo = decimalFromInt64(c.i64[r])
		default:
			neg, hi, lo = decimalFromFixed(c.data[r*c.width : (r+1)*c.width])
		}
		return string(appendDecimal(nil, neg, hi, lo, n.scale))
	}
	return nil
}
