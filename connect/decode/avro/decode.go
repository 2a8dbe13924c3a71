package avro

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	hamba "github.com/hamba/avro/v2"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

const (
	// maxDepth bounds the nesting of a datum (a recursive schema lets a
	// payload nest as deep as it has bytes): deeper is a record error, not
	// a goroutine stack exhausted by one bad record.
	maxDepth = 512
	// maxZeroSizeItems bounds the items of arrays whose items take no
	// bytes (null, an empty record) in one datum: their count is all a
	// payload says, and it could say 2^62.
	maxZeroSizeItems = 1 << 20
)

// codec is a compiled schema; safe for concurrent use.
type codec struct {
	root   *node
	schema []byte // ValueSchema, from root (delta.go)
}

// state is one AppendJSON's: hamba's Reader over the payload and a buffer
// for bytes and strings, pooled so a datum costs no allocation.
type state struct {
	r       *hamba.Reader
	buf     []byte // the bytes of one bytes/string/fixed value
	tmp     []byte // a reordered record's field values
	zeroCnt int
	payload int // the payload's length: no value is longer
}

var states = sync.Pool{New: func() any { return &state{r: hamba.NewReader(nil, 0)} }}

// AppendJSON implements decode.Codec. Every error is a *decode.RecordError.
func (c *codec) AppendJSON(dst, payload []byte) ([]byte, error) {
	st := states.Get().(*state)
	defer st.release()
	st.r.Error = nil
	st.r.Reset(payload)
	st.zeroCnt, st.payload = 0, len(payload)
	mark := len(dst)
	out, err := st.value(dst, c.root, 0)
	if err == nil {
		st.r.Peek()
		if st.r.Error == nil {
			err = errors.New("trailing bytes after the datum")
		}
	}
	st.r.Reset(nil) // keep no reference to the payload in the pool
	if err != nil {
		return dst[:mark], &decode.RecordError{Err: fmt.Errorf("avro: %w", err)}
	}
	return out, nil
}

// maxPooledBuffer: a state that read a larger value drops its buffers
// rather than keep them in the pool for every later record.
const maxPooledBuffer = 1 << 20

func (st *state) release() {
	if cap(st.buf) > maxPooledBuffer {
		st.buf = nil
	}
	if cap(st.tmp) > maxPooledBuffer {
		st.tmp = nil
	}
	states.Put(st)
}

// fail turns the Reader's sticky error into a message about the payload.
func (st *state) fail() error {
	err := st.r.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("truncated datum")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "avro: "))
}

func (st *state) value(dst []byte, n *node, depth int) ([]byte, error) {
	r := st.r
	switch n.kind {
	case kNull:
		return append(dst, "null"...), nil
	case kBool:
		v := r.ReadBool()
		if r.Error != nil {
			return dst, st.fail()
		}
		if v {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case kInt, kDate, kTimeMillis:
		v, err := st.int()
		if err != nil {
			return dst, err
		}
		switch n.kind {
		case kDate:
			return appendDate(dst, v)
		case kTimeMillis:
			return appendTime(dst, v, 3)
		}
		return appendInt(dst, v), nil
	case kLong, kTimeMicros, kTimestampMillis, kTimestampMicros, kLocalTimestampMillis, kLocalTimestampMicros:
		v := r.ReadLong()
		if r.Error != nil {
			return dst, st.fail()
		}
		switch n.kind {
		case kTimeMicros:
			return appendTime(dst, v, 6)
		case kTimestampMillis:
			return appendTimestamp(dst, v, 3, true)
		case kTimestampMicros:
			return appendTimestamp(dst, v, 6, true)
		case kLocalTimestampMillis:
			return appendTimestamp(dst, v, 3, false)
		case kLocalTimestampMicros:
			return appendTimestamp(dst, v, 6, false)
		}
		return appendInt(dst, v), nil
	case kFloat, kDouble:
		var f float64
		switch n.wire {
		case kLong:
			v := r.ReadLong()
			f = float64(v)
			if n.kind == kFloat {
				f = float64(float32(v)) // rounded once, as Java's (float) long
			}
		case kFloat:
			f = float64(r.ReadFloat())
		default:
			f = r.ReadDouble()
		}
		if r.Error != nil {
			return dst, st.fail()
		}
		bits := 64
		if n.kind == kFloat {
			bits = 32
		}
		return jsonw.AppendFloat(dst, f, bits), nil
	case kBytes, kString, kDecimalBytes:
		b, err := st.bytes()
		if err != nil {
			return dst, err
		}
		switch n.kind {
		case kString:
			dst, ok := jsonw.AppendString(dst, b)
			if !ok {
				return dst, errors.New("string is not valid UTF-8")
			}
			return dst, nil
		case kDecimalBytes:
			return jsonw.AppendDecimal(dst, b, n.scale), nil
		}
		return jsonw.AppendBase64(dst, b), nil
	case kFixed, kDecimalFixed, kDuration:
		b, err := st.fixed(n.size)
		if err != nil {
			return dst, err
		}
		switch n.kind {
		case kDecimalFixed:
			return jsonw.AppendDecimal(dst, b, n.scale), nil
		case kDuration:
			return appendDuration(dst, b), nil
		}
		return jsonw.AppendBase64(dst, b), nil
	case kEnum:
		i, err := st.int()
		if err != nil {
			return dst, err
		}
		if i < 0 || int(i) >= len(n.symbols) || n.symbols[i] == nil {
			return dst, fmt.Errorf("enum index %d out of range", i)
		}
		return append(dst, n.symbols[i]...), nil
	case kUnion:
		i := r.ReadLong()
		if r.Error != nil {
			return dst, st.fail()
		}
		if i < 0 || i >= int64(len(n.branches)) {
			return dst, fmt.Errorf("union index %d out of range (%d branches)", i, len(n.branches))
		}
		b := n.branches[i]
		if b.open == nil {
			return st.value(dst, b.node, depth)
		}
		dst = append(dst, b.open...)
		dst, err := st.value(dst, b.node, depth)
		return append(dst, '}'), err
	case kWrap:
		dst = append(dst, n.branches[0].open...)
		dst, err := st.value(dst, n.branches[0].node, depth)
		return append(dst, '}'), err
	case kArray, kMap:
		return st.container(dst, n, depth+1)
	case kRecord:
		return st.record(dst, n, depth+1)
	}
	return dst, fmt.Errorf("unsupported node kind %d", n.kind)
}

// int reads an Avro int. hamba's ReadInt keeps the low 32 bits of a
// varint that holds more; read as a long, a value past int32 is the
// record's error instead of a silently different number.
func (st *state) int() (int64, error) {
	v := st.r.ReadLong()
	if st.r.Error != nil {
		return 0, st.fail()
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("int %d out of the int range", v)
	}
	return v, nil
}

// bytes reads a length-prefixed value. The length is checked against the
// payload before anything is allocated, so a corrupt length costs nothing.
func (st *state) bytes() ([]byte, error) {
	size := st.r.ReadLong()
	if st.r.Error != nil {
		return nil, st.fail()
	}
	if size < 0 {
		return nil, fmt.Errorf("negative length %d", size)
	}
	if size > int64(st.payload) {
		return nil, errors.New("truncated datum")
	}
	return st.fixed(int(size))
}

func (st *state) fixed(size int) ([]byte, error) {
	if cap(st.buf) < size {
		st.buf = make([]byte, size)
	}
	b := st.buf[:size]
	st.r.Read(b)
	if st.r.Error != nil {
		return nil, st.fail()
	}
	return b, nil
}

// container writes an array or a map: blocks of items until a zero count.
func (st *state) container(dst []byte, n *node, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	open, close := byte('['), byte(']')
	if n.kind == kMap {
		open, close = '{', '}'
	}
	dst = append(dst, open)
	first := true
	for {
		count, _ := st.r.ReadBlockHeader()
		if st.r.Error != nil {
			return dst, st.fail()
		}
		if count == 0 {
			return append(dst, close), nil
		}
		if count < 0 {
			return dst, fmt.Errorf("invalid block count %d", count)
		}
		if n.kind == kArray && n.elem.zeroSize {
			st.zeroCnt += int(min(count, maxZeroSizeItems+1))
			if st.zeroCnt > maxZeroSizeItems {
				return dst, fmt.Errorf("more than %d items that take no bytes", maxZeroSizeItems)
			}
		}
		for range count {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			var err error
			if n.kind == kMap {
				var k []byte
				if k, err = st.bytes(); err != nil {
					return dst, err
				}
				var ok bool
				if dst, ok = jsonw.AppendString(dst, k); !ok {
					return dst, errors.New("map key is not valid UTF-8")
				}
				dst = append(dst, ':')
			}
			if dst, err = st.value(dst, n.elem, depth); err != nil {
				return dst, err
			}
		}
	}
}

func (st *state) record(dst []byte, n *node, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	if n.order != nil {
		return st.reordered(dst, n, depth)
	}
	dst = append(dst, '{')
	first := true
	for i := range n.fields {
		f := &n.fields[i]
		if f.skip {
			mark := len(dst)
			var err error
			if dst, err = st.value(dst, f.node, depth); err != nil {
				return dst, fieldErr(f, err)
			}
			dst = dst[:mark]
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, f.key...)
		if f.def != nil {
			dst = append(dst, f.def...)
			continue
		}
		var err error
		if dst, err = st.value(dst, f.node, depth); err != nil {
			return dst, fieldErr(f, err)
		}
	}
	return append(dst, '}'), nil
}

// reordered writes a record whose output order is not the wire's: the
// values are decoded after dst's end, then moved into place.
func (st *state) reordered(dst []byte, n *node, depth int) ([]byte, error) {
	mark := len(dst)
	spans := make([][2]int, len(n.fields))
	for i := range n.fields {
		f := &n.fields[i]
		if f.def != nil {
			continue
		}
		start := len(dst)
		var err error
		if dst, err = st.value(dst, f.node, depth); err != nil {
			return dst, fieldErr(f, err)
		}
		spans[i] = [2]int{start - mark, len(dst) - mark}
	}
	st.tmp = append(st.tmp[:0], dst[mark:]...)
	dst = append(dst[:mark], '{')
	for k, i := range n.order {
		if k > 0 {
			dst = append(dst, ',')
		}
		f := &n.fields[i]
		dst = append(dst, f.key...)
		if f.def != nil {
			dst = append(dst, f.def...)
			continue
		}
		dst = append(dst, st.tmp[spans[i][0]:spans[i][1]]...)
	}
	return append(dst, '}'), nil
}

func fieldErr(f *field, err error) error {
	return fmt.Errorf("field %s: %w", f.key[:len(f.key)-1], err)
}

// appendDuration writes Avro's duration (three little-endian unsigned
// 32-bit counts) as an object: months and days are not a fixed number of
// milliseconds, so the three stay apart.
func appendDuration(dst, b []byte) []byte {
	dst = append(dst, `{"months":`...)
	dst = appendInt(dst, int64(binary.LittleEndian.Uint32(b[0:4])))
	dst = append(dst, `,"days":`...)
	dst = appendInt(dst, int64(binary.LittleEndian.Uint32(b[4:8])))
	dst = append(dst, `,"milliseconds":`...)
	dst = appendInt(dst, int64(binary.LittleEndian.Uint32(b[8:12])))
	return append(dst, '}')
}
