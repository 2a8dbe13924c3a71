package flatbuf

import (
	"encoding/binary"
	"fmt"
)

// buffer reads one untrusted FlatBuffer. Every read checks its bounds
// first: the Go runtime's accessors trust the buffer and would read past
// it (or panic) on a malformed one. Positions are ints; a position plus an
// offset read from the payload is computed in 64 bits and compared with the
// length before any slice is taken.
type buffer []byte

// errRange is a read past the end of the payload.
func (b buffer) errRange(what string, pos, n int) error {
	return fmt.Errorf("malformed flatbuffer: %s at byte %d (+%d) outside the %d-byte payload", what, pos, n, len(b))
}

func (b buffer) check(what string, pos, n int) error {
	if pos < 0 || n < 0 || pos > len(b) || n > len(b)-pos {
		return b.errRange(what, pos, n)
	}
	return nil
}

func (b buffer) u16(pos int) uint16 { return binary.LittleEndian.Uint16(b[pos:]) }
func (b buffer) u32(pos int) uint32 { return binary.LittleEndian.Uint32(b[pos:]) }
func (b buffer) u64(pos int) uint64 { return binary.LittleEndian.Uint64(b[pos:]) }

// deref follows the uoffset at pos (already checked to hold 4 bytes); a
// target past the payload comes back as -1, which check refuses.
func (b buffer) deref(pos int) int {
	v := uint64(pos) + uint64(b.u32(pos))
	if v > uint64(len(b)) {
		return -1
	}
	return int(v)
}

// table is one table's position and the bounds of its vtable and inline
// part, checked once.
type table struct {
	pos    int // the table's start (its soffset to the vtable)
	vtable int
	vtLen  int // bytes of the vtable
	size   int // bytes of the inline part, from pos
}

// table checks the table at pos: its vtable inside the payload, and its
// inline part inside the payload.
func (b buffer) table(pos int) (table, error) {
	if err := b.check("table", pos, 4); err != nil {
		return table{}, err
	}
	vt64 := int64(pos) - int64(int32(b.u32(pos)))
	if vt64 < 0 || vt64 > int64(len(b)) {
		return table{}, fmt.Errorf("malformed flatbuffer: the table at byte %d points to a vtable outside the payload", pos)
	}
	vt := int(vt64)
	if err := b.check("vtable", vt, 4); err != nil {
		return table{}, err
	}
	t := table{pos: pos, vtable: vt, vtLen: int(b.u16(vt)), size: int(b.u16(vt + 2))}
	if t.vtLen < 4 || t.vtLen%2 != 0 {
		return table{}, fmt.Errorf("malformed flatbuffer: vtable at byte %d has length %d", vt, t.vtLen)
	}
	if err := b.check("vtable", vt, t.vtLen); err != nil {
		return table{}, err
	}
	if t.size < 4 {
		return table{}, fmt.Errorf("malformed flatbuffer: table at byte %d has size %d", pos, t.size)
	}
	if err := b.check("table", pos, t.size); err != nil {
		return table{}, err
	}
	return t, nil
}

// field returns the position of the field at vtable slot slot holding n
// bytes, or -1 when the table does not have it. A field must lie inside
// the table's inline part.
func (b buffer) field(t table, slot, n int) (int, error) {
	if slot+2 > t.vtLen {
		return -1, nil
	}
	off := int(b.u16(t.vtable + slot))
	if off == 0 {
		return -1, nil
	}
	if off < 4 || off+n > t.size {
		return -1, fmt.Errorf("malformed flatbuffer: field at table byte %d (+%d) outside the table's %d bytes", off, n, t.size)
	}
	return t.pos + off, nil
}

// vector checks the vector the uoffset at pos points to, of elements of
// size bytes, and returns the position of its first element and its
// length.
func (b buffer) vector(pos, size int) (int, int, error) {
	v := b.deref(pos)
	if err := b.check("vector length", v, 4); err != nil {
		return 0, 0, err
	}
	n := int(b.u32(v))
	if n > (len(b)-v-4)/size {
		return 0, 0, fmt.Errorf("malformed flatbuffer: vector at byte %d of %d %d-byte elements outside the %d-byte payload", v, n, size, len(b))
	}
	return v + 4, n, nil
}
