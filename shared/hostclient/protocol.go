package hostclient

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
)

// The wire format of cmd/picomq-host/PROTOCOL.md: frames, requests and
// the frames the host writes, as bytes. Nothing here touches the process or
// its pipes (host.go does), so a change to the format stays in this file.

// protocolVersion is the version the host sends in its HELLO frame.
const protocolVersion = 5

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
	openNoLog       = 1  // OPEN: pass log == NULL
	consumeRejects  = 1  // CONSUME: pass a reject callback (ABI 1.1)
	consumeBatch1_0 = 2  // CONSUME: pass a 1.0 host's batch (struct_size without the 1.1 fields)
	consumeBatch1_2 = 4  // CONSUME: pass a 1.2 host's batch (struct_size without the 1.3 value_schema)
	consumeBatch1_3 = 8  // CONSUME: pass a 1.3 host's batch (struct_size without the 1.4 redrive fields)
	consumeBatch1_4 = 16 // CONSUME: pass a 1.4 host's batch (struct_size without the 1.5 pipelined fields)
	consumeDangling = 32 // CONSUME: pass empty byte strings and arrays as a pointer that is no address
	logLate         = 1  // LOG: the context was not live
	logNullMsg      = 2  // LOG: msg was NULL
)

// response is a RESPONSE frame, or err for a call the host never
// answered (it exited).
type response struct {
	status  Status
	value   uint64
	text    string
	rejects []Rejection
	err     error
}

// hello is the HELLO frame.
type hello struct {
	version, workers, major, minor uint32
}

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

// Requests: each encodeX appends the fields of one op after newRequest's
// header, as PROTOCOL.md lists them.

func encodeLoad(e *encoder, path string, major, minor uint32, tableSize int) {
	e.str(path)
	e.u32(major)
	e.u32(minor)
	e.size("table size", tableSize)
}

func encodeDescribe(e *encoder, lib uint32, outCap int) {
	e.u32(lib)
	e.size("out cap", outCap)
}

func encodeOpen(e *encoder, lib uint32, ctx uint64, noLog bool, errCap int, config string) {
	e.u32(lib)
	e.u64(ctx)
	if noLog {
		e.u8(openNoLog)
	} else {
		e.u8(0)
	}
	e.size("err cap", errCap)
	e.str(config)
}

func encodeConsume(e *encoder, lib uint32, handle uint64, cc *callConfig, b *Batch) {
	e.u32(lib)
	e.u64(handle)
	e.size("err cap", cc.ErrCap)
	var flags uint8
	for _, f := range []struct {
		on  bool
		bit uint8
	}{
		{b.AcceptRejections, consumeRejects},
		{cc.Batch1_0, consumeBatch1_0},
		{cc.Batch1_2, consumeBatch1_2},
		{cc.Batch1_3, consumeBatch1_3},
		{cc.Batch1_4, consumeBatch1_4},
		{cc.Dangling, consumeDangling},
	} {
		if f.on {
			flags |= f.bit
		}
	}
	e.u8(flags)
	encodeBatch(e, b)
}

func encodeMetrics(e *encoder, lib uint32, handle uint64, outCap int) {
	e.u32(lib)
	e.u64(handle)
	e.size("out cap", outCap)
}

func encodeClose(e *encoder, lib uint32, handle uint64, errCap int) {
	e.u32(lib)
	e.u64(handle)
	e.size("err cap", errCap)
}

// encodeSetenv encodes setenv(name, *value), or unsetenv(name) for a nil
// value.
func encodeSetenv(e *encoder, name string, value *string) {
	e.str(name)
	if value == nil {
		e.u8(0)
	} else {
		e.u8(1)
		e.str(*value)
	}
}

// encodedSize is how many bytes encode appends: the request buffer is
// sized once instead of growing through a batch of payloads.
func (b *Batch) encodedSize() int {
	n := 4 + 4 + 4 + len(b.Topic) + 4 + len(b.Schema) + 1 + 1 + 8 + 1 + 8 + 4
	if b.ValueSchema != nil {
		n += 4 + len(b.ValueSchema)
	}
	if b.Redrive != nil {
		n += 4 + len(b.Redrive.Topic) + 4 + 4 + 8*len(b.Redrive.Offsets)
	}
	for i := range b.Records {
		r := &b.Records[i]
		n += 8 + 8 + 1 + 4 + 4 + len(r.Payload)
		if r.Key != nil {
			n += 4 + len(r.Key)
		}
		for _, h := range r.Headers {
			n += 4 + len(h.Key) + 4 + len(h.Value)
		}
	}
	return n
}

// encodeBatch appends a picomq_batch.
func encodeBatch(e *encoder, b *Batch) {
	e.b = slices.Grow(e.b, b.encodedSize())
	e.u32(b.Attempt)
	e.u32(b.Partition)
	e.str(b.Topic)
	e.str(b.Schema)
	if b.ValueSchema == nil {
		e.u8(0)
	} else {
		e.u8(1)
		e.bytes(b.ValueSchema)
	}
	if r := b.Redrive; r == nil {
		e.u8(0)
	} else {
		e.u8(1)
		e.str(r.Topic)
		e.u32(r.Partition)
		e.size("redrive offset count", len(r.Offsets))
		for _, o := range r.Offsets {
			e.u64(o)
		}
	}
	e.u64(b.RangeLast)
	if b.Follows == nil {
		e.u8(0)
		e.u64(0)
	} else {
		e.u8(1)
		e.u64(*b.Follows)
	}
	e.size("record count", len(b.Records))
	for i := range b.Records {
		r := &b.Records[i]
		e.u64(r.Offset)
		e.u64(uint64(r.TimestampMs))
		if r.Key == nil {
			e.u8(0)
		} else {
			e.u8(1)
			e.bytes(r.Key)
		}
		e.size("header count", len(r.Headers))
		for _, h := range r.Headers {
			e.str(h.Key)
			e.bytes(h.Value)
		}
		e.bytes(r.Payload)
	}
}

// Frames the host writes; body[0] is the kind.

func decodeHello(body []byte) (hello, error) {
	d := &decoder{b: body[1:]}
	hi := hello{d.u32(), d.u32(), d.u32(), d.u32()}
	if d.short {
		return hello{}, errors.New("short HELLO frame")
	}
	return hi, nil
}

func decodeResponse(body []byte) (id uint64, r response, err error) {
	d := &decoder{b: body[1:]}
	id = d.u64()
	r = response{status: Status(int32(d.u32())), value: d.u64(), text: d.str()}
	for n := d.u32(); n > 0 && !d.short; n-- {
		r.rejects = append(r.rejects, Rejection{Index: int(d.u64()), Reason: RejectReason(int32(d.u32())), Message: d.str()})
	}
	if d.short {
		return 0, response{}, errors.New("short RESPONSE frame")
	}
	return id, r, nil
}

func decodeLog(body []byte) (LogLine, error) {
	d := &decoder{b: body[1:]}
	l := LogLine{Ctx: d.u64(), Lib: d.u32()}
	l.Level = levelOf(int32(d.u32()))
	flags := d.u8()
	l.Message = d.str()
	if d.short {
		return LogLine{}, errors.New("short LOG frame")
	}
	l.Late = flags&logLate != 0
	l.NullMessage = flags&logNullMsg != 0
	return l, nil
}

// loadText is the text of LOAD's OK response: the ABI version the plugin
// wrote into the table.
type loadText struct {
	Major uint32 `json:"abi_major"`
	Minor uint32 `json:"abi_minor"`
}

func decodeLoadText(text string) (loadText, error) {
	var v loadText
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return loadText{}, fmt.Errorf("bad response %q: %w", text, err)
	}
	return v, nil
}
