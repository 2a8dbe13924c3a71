package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// Compile turns one registered schema into a Codec (the avro and proto
// packages provide one each). Its error means the schema cannot be used:
// the records that name it are record errors.
type Compile func(s Schema) (decode.Codec, error)

// Decoder decodes payloads in the Confluent wire format: magic byte 0, the
// schema id as 4 big-endian bytes, then the format's bytes (for Protobuf
// the message-index varints first; the proto codec reads them). The
// Codec of each id is built once: concurrent payloads of a new id wait for
// one fetch, and an id whose schema failed to compile, or is of another
// type than the block's, stays failed (no refetch per record) until the
// runtime restarts. A fetch that failed transiently is not remembered: the
// next payload of that id fetches again. An id the registry does not know
// is not remembered either, and is a transient error until the Client's
// grace period has passed since this Decoder first saw it unknown (a
// registry replica behind a load balancer may lag behind the producer's
// registration); after it, the record's error.
type Decoder struct {
	client  *Client
	typ     sr.SchemaType
	compile Compile
	now     func() time.Time // time.Now; tests move it

	// ids: schema id -> *entry. Read for every record (twice: its codec,
	// its value schema), written once per id: a sync.Map, whose reads of
	// a stable key take no lock, so deliveries in flight at once do not
	// queue on it.
	ids sync.Map

	mu      sync.Mutex
	unknown map[int]time.Time // id -> when first seen unknown; one entry per id, until it is found
}

// entry is one id's codec, or its permanent failure, or a fetch under way
// (done still open).
type entry struct {
	done  chan struct{}
	codec decode.Codec
	err   error // a *decode.RecordError once done, or nil
}

// NewDecoder returns a Decoder for a block whose schemas are of type typ
// (sr.TypeAvro or sr.TypeProtobuf), compiled with compile.
func NewDecoder(client *Client, typ sr.SchemaType, compile Compile) *Decoder {
	return &Decoder{client: client, typ: typ, compile: compile, now: time.Now, unknown: map[int]time.Time{}}
}

var header sr.ConfluentHeader

// AppendJSON implements decode.Decoder.
func (d *Decoder) AppendJSON(ctx context.Context, _ string, dst, payload []byte) ([]byte, error) {
	switch {
	case len(payload) == 0:
		return dst, decode.Recordf("empty payload: no Confluent wire-format header (magic byte 0, 4-byte schema id)")
	case payload[0] != 0:
		return dst, decode.Recordf("payload starts with byte 0x%02x, not the Confluent wire format's magic byte 0 (was it written without a Schema Registry serializer?)", payload[0])
	case len(payload) < 5:
		return dst, decode.Recordf("payload of %d bytes is shorter than the 5-byte Confluent wire-format header (magic byte 0, 4-byte schema id)", len(payload))
	}
	id, rest, err := header.DecodeID(payload)
	if err != nil { // checked above; kept so a change in sr cannot slip by
		return dst, decode.Recordf("Confluent wire-format header: %v", err)
	}
	codec, err := d.codec(ctx, id)
	if err != nil {
		return dst, err
	}
	out, err := codec.AppendJSON(dst, rest)
	if err != nil {
		if !decode.IsRecordError(err) {
			err = &decode.RecordError{Err: err}
		}
		return dst, decode.Recordf("schema id %d: %w", id, err)
	}
	return out, nil
}

// codec returns id's Codec, fetching and compiling it when it is new. Only
// one caller fetches an id at a time; the others wait for its result (or
// for their own ctx) and share it, error included.
func (d *Decoder) codec(ctx context.Context, id int) (decode.Codec, error) {
	v, ok := d.ids.Load(id)
	if !ok {
		e := &entry{done: make(chan struct{})}
		if v, ok = d.ids.LoadOrStore(id, e); !ok {
			d.load(ctx, id, e)
			return e.codec, e.err
		}
	}
	e := v.(*entry)
	select {
	case <-e.done:
		return e.codec, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load fills e and closes its done. It keeps e in the cache only when the
// outcome is the schema's for good: a codec, a type mismatch, a compile
// failure (a panic of compile included: it would panic again). A
// transient failure, and an id or reference the registry does not have (a
// lagging replica may have it later), are forgotten, so the next payload
// of that id fetches again.
func (d *Decoder) load(ctx context.Context, id int, e *entry) {
	defer func() {
		if e.codec == nil && e.err == nil { // never a nil codec without an error
			e.err = decode.Recordf("schema id %d: no codec was built", id)
		}
		close(e.done)
	}()
	s, err := d.client.SchemaByID(ctx, id)
	if err == nil {
		d.mu.Lock()
		delete(d.unknown, id) // found: a later "not found" starts a new grace
		d.mu.Unlock()
	}
	switch {
	case err != nil:
		e.err = d.unknownGrace(id, err)
		d.ids.CompareAndDelete(id, e)
	case s.Type != d.typ:
		e.err = decode.Recordf("schema id %d is of type %s; this block decodes %s", id, s.Type, d.typ)
	default:
		codec, err := compileSafe(d.compile, s)
		if err != nil {
			e.err = decode.Recordf("schema id %d (%s) does not compile: %v", id, s.Type, err)
			return
		}
		e.codec = codec
	}
}

// unknownGrace turns err, when it says the registry does not know id,
// into a transient error until the grace period has passed since this
// Decoder first saw id unknown; after it err stands, the record's. Any
// other err is returned as it is.
func (d *Decoder) unknownGrace(id int, err error) error {
	var ue *UnknownIDError
	if !errors.As(err, &ue) {
		return err
	}
	now := d.now()
	d.mu.Lock()
	first, seen := d.unknown[id]
	if !seen {
		first = now
		d.unknown[id] = now
	}
	d.mu.Unlock()
	waited := now.Sub(first)
	if waited >= d.client.grace {
		return err
	}
	return fmt.Errorf("%s (unknown for %s: a registry replica may not have a new schema yet; retried until %s have passed, then the record's error)",
		ue, waited.Round(time.Millisecond), d.client.grace)
}

// compileSafe is compile(s) with a panic of the compiler turned into an
// error (a schema that panics a library must not crash the runtime, and
// then again on every restart), and no codec without an error.
func compileSafe(compile Compile, s Schema) (codec decode.Codec, err error) {
	defer func() {
		if r := recover(); r != nil {
			codec, err = nil, fmt.Errorf("the compiler panicked: %v", r)
		}
	}()
	codec, err = compile(s)
	if err == nil && codec == nil {
		err = errors.New("the compiler returned no codec")
	}
	return codec, err
}

// RecordSchema implements decode.Describer: the value schema of the codec
// of payload's schema id (decode.CodecSchema), asked once AppendJSON
// decoded the payload, so the codec is at hand; nil when it is not, or
// describes nothing. It never waits for the registry.
func (d *Decoder) RecordSchema(_ context.Context, _ string, payload []byte) []byte {
	if len(payload) < 5 || payload[0] != 0 {
		return nil
	}
	id, rest, err := header.DecodeID(payload)
	if err != nil {
		return nil
	}
	v, ok := d.ids.Load(id)
	if !ok {
		return nil
	}
	e := v.(*entry)
	select {
	case <-e.done:
	default:
		return nil
	}
	if e.codec == nil {
		return nil
	}
	return decode.CodecSchema(e.codec, rest)
}
