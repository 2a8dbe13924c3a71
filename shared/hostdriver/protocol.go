package hostdriver

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

// protocolVersion is the version the host sends in its HELLO frame.
const protocolVersion = 2

// maxFrame is the largest frame body either side accepts.
const maxFrame = 1 << 30

// op is a request opcode.
type op uint8

const (
	opLoad op = 1 + iota
	opDescribe
	opOpen
	opConsume
	opMetrics
	opClose
	opSetenv
)

func (o op) String() string {
	switch o {
	case opLoad:
		return "load"
	case opDescribe:
		return "describe"
	case opOpen:
		return "open"
	case opConsume:
		return "consume"
	case opMetrics:
		return "metrics"
	case opClose:
		return "close"
	case opSetenv:
		return "setenv"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Kinds of frames the host writes.
const (
	kindHello    = 1
	kindResponse = 2
	kindLog      = 3
)

// Flag bits.
const (
	openNoLog       = 1 // OPEN: pass log == NULL
	consumeRejects  = 1 // CONSUME: pass a reject callback (ABI 1.1)
	consumeBatch1_0 = 2 // CONSUME: pass a 1.0 host's batch (struct_size without the 1.1 fields)
	logLate         = 1 // LOG: the context was not live
	logNullMsg      = 2 // LOG: msg was NULL
)

// encoder builds one request frame; the first 4 bytes hold the length.
type encoder struct {
	b   []byte
	err error
}

func newRequest(id uint64, worker uint32, o op) *encoder {
	e := &encoder{}
	if b, ok := framePool.Get().(*[]byte); ok {
		e.b = (*b)[:4]
	} else {
		e.b = make([]byte, 4, 128)
	}
	e.u64(id)
	e.u32(worker)
	e.u8(uint8(o))
	return e
}

// framePool keeps request buffers between calls: a consume request is as
// large as its batch, and allocating (and zeroing) one per batch was a good
// part of the runtime's CPU per record. Buffers above maxPooledFrame are
// left to the GC.
var framePool sync.Pool

const maxPooledFrame = 16 << 20

// release returns the encoder's buffer to framePool; e must not be used
// afterwards.
func (e *encoder) release() {
	if cap(e.b) <= maxPooledFrame {
		b := e.b[:0]
		framePool.Put(&b)
	}
	e.b = nil
}

func (e *encoder) u8(v uint8)   { e.b = append(e.b, v) }
func (e *encoder) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }

// size appends n as a u32 field, recording an error if it does not fit.
func (e *encoder) size(what string, n int) {
	if n < 0 || n > math.MaxUint32 {
		if e.err == nil {
			e.err = fmt.Errorf("%s %d does not fit a u32", what, n)
		}
		n = 0
	}
	e.u32(uint32(n))
}

func (e *encoder) bytes(p []byte) {
	e.size("length", len(p))
	e.b = append(e.b, p...)
}

func (e *encoder) str(s string) {
	e.size("length", len(s))
	e.b = append(e.b, s...)
}

// frame patches the length and returns the frame.
func (e *encoder) frame() ([]byte, error) {
	if e.err == nil && len(e.b)-4 > maxFrame {
		e.err = fmt.Errorf("request of %d bytes exceeds the %d-byte frame limit", len(e.b)-4, maxFrame)
	}
	if e.err != nil {
		return nil, e.err
	}
	binary.LittleEndian.PutUint32(e.b, uint32(len(e.b)-4))
	return e.b, nil
}

// decoder reads fields of one frame body.
type decoder struct {
	b     []byte
	short bool
}

func (d *decoder) take(n int) []byte {
	if d.short || len(d.b) < n {
		d.short = true
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) str() string {
	n := d.u32()
	if uint64(n) > uint64(len(d.b)) {
		d.short = true
		return ""
	}
	return string(d.take(int(n)))
}

var errBadFrame = errors.New("bad frame length")

// readFrame reads one frame body. It returns io.EOF at a clean end of the
// stream and io.ErrUnexpectedEOF when the stream ends inside a frame.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n == 0 || n > maxFrame {
		return nil, fmt.Errorf("%w %d", errBadFrame, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}
