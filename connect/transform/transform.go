package transform

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Type names a transform, as [[topics.transforms]] type spells it.
type Type string

// The transforms, named as the comparable runtime names them.
const (
	AddFields      Type = "add_fields"
	DeleteFields   Type = "delete_fields"
	UpdateFields   Type = "update_fields"
	FilterFields   Type = "filter_fields"
	FilterRecords  Type = "filter_records"
	UnwrapEnvelope Type = "unwrap_envelope"
)

// Types lists every transform, in the docs' order.
var Types = []Type{AddFields, DeleteFields, UpdateFields, FilterFields, FilterRecords, UnwrapEnvelope}

// Spec is one transform as configured: the keys of one
// [[topics.transforms]] table. Which keys a type takes is checked by
// Compile.
type Spec struct {
	Type Type
	// Fields are add_fields' fields, added in this order.
	Fields []Field
	// Paths are the fields delete_fields removes (dotted paths into nested
	// objects) or the top-level fields filter_fields keeps.
	Paths []string
	// Field is the dotted path update_fields, filter_records and
	// unwrap_envelope act on.
	Field string
	// RenameTo is update_fields' new name for Field, in the same object.
	RenameTo string
	// Value, when HasValue, is update_fields' new value for Field: any
	// value TOML gives (string, int64, float64, bool, time, array, table).
	Value    any
	HasValue bool
	// IfMissing is what update_fields does with a record without Field:
	// "skip" (the default: the record goes on unchanged) or "error".
	IfMissing string
	// Equals (when HasEquals), In or Present is filter_records' test, one
	// of the three.
	Equals    any
	HasEquals bool
	In        []any
	Present   *bool
	// Action is what filter_records does with a record that passes the
	// test: "keep" (the default; the others are dropped) or "drop".
	Action string
	// OnNull is what unwrap_envelope does with a record whose Field is
	// null, such as a Debezium delete: "drop" (the default, counted) or
	// "error".
	OnNull string
}

// Field is one field add_fields adds: Value (when HasValue), a Compute
// name, or the value of the record's Header of that name.
type Field struct {
	Name     string
	Value    any
	HasValue bool
	Compute  string
	Header   string
}

// Computes are the values add_fields computes per record.
var Computes = []string{"timestamp_ms", "timestamp_rfc3339", "topic", "partition", "offset", "key", "key_base64", "uuid"}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Meta is what a transform may know of a record besides its payload.
type Meta struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       []byte // nil: the record has no key
	Headers   []Header
}

// SpecError is a Spec that cannot be compiled: Key is the key at fault
// ("" for the table as a whole).
type SpecError struct {
	Key string
	Msg string
}

func (e *SpecError) Error() string {
	if e.Key == "" {
		return e.Msg
	}
	return e.Key + ": " + e.Msg
}

// RecordError is a record a transform cannot apply to: retrying cannot
// help, the record goes to the dead-letter topic or stops the consumer.
type RecordError struct {
	Step    int  // 1-based position of the transform in the chain; 0 when the payload is not JSON
	Type    Type // the transform's type; "" when the payload is not JSON
	NotJSON bool // the payload is not JSON at all (class encoding, not value)
	Msg     string
}

func (e *RecordError) Error() string {
	if e.NotJSON {
		return "not valid JSON: " + e.Msg
	}
	return fmt.Sprintf("transform %d (%s): %s", e.Step, e.Type, e.Msg)
}

// step is one compiled transform. apply changes o in place; keep false
// drops the record.
type step interface {
	apply(s *state, m *Meta) (keep bool, err error)
}

// Chain is the compiled transforms of one [[topics]] block, run in order.
// It is safe for concurrent use.
type Chain struct {
	steps []step
	types []Type
}

// Compile checks and compiles specs, in order. Every error is a
// *SpecError naming the spec's key; the index of the failing spec is
// returned with it.
func Compile(specs []Spec) (*Chain, int, error) {
	c := &Chain{}
	for i, sp := range specs {
		st, err := compile(sp)
		if err != nil {
			return nil, i, err
		}
		if f, ok := st.(*filterRecords); ok {
			f.step = i + 1
		}
		c.steps = append(c.steps, st)
		c.types = append(c.types, sp.Type)
	}
	return c, 0, nil
}

// Len is the number of transforms.
func (c *Chain) Len() int { return len(c.steps) }

// state is one application's scratch: the record's top-level object and
// the bytes of the values steps made. Pooled: a chain runs concurrently.
type state struct {
	o     object
	arena []byte
}

var states = sync.Pool{New: func() any { return new(state) }}

// Apply runs the chain on payload, one JSON object, and appends the result
// to dst. keep is false when a transform dropped the record (dst is then
// returned unchanged). Every error is a *RecordError. Member values keep
// their bytes as written: numbers every digit, nested objects their order
// and spacing; the top-level object is written compactly, in its order.
func (c *Chain) Apply(dst, payload []byte, m *Meta) (out []byte, keep bool, err error) {
	s := states.Get().(*state)
	defer func() {
		clear(s.o.members) // drop references into payload
		s.o.members, s.arena = s.o.members[:0], s.arena[:0]
		states.Put(s)
	}()
	ok, isObj := parseObjectInto(payload, &s.o, &s.arena)
	switch {
	case !ok:
		return dst, false, &RecordError{NotJSON: true, Msg: "the payload does not parse"}
	case !isObj:
		return dst, false, &RecordError{Step: 1, Type: c.types[0], Msg: "the payload is not a JSON object"}
	}
	for i, st := range c.steps {
		keep, err := st.apply(s, m)
		if err != nil {
			return dst, false, &RecordError{Step: i + 1, Type: c.types[i], Msg: err.Error()}
		}
		if !keep {
			return dst, false, nil
		}
	}
	return s.o.appendTo(dst), true, nil
}

// Notices returns the warnings the chain has not told yet, each at most
// once in the chain's life: a filter_records that dropped a record because
// its field was missing or null. The caller logs them (asking after a
// batch in which records were dropped is enough).
func (c *Chain) Notices() []string {
	var out []string
	for _, st := range c.steps {
		if f, ok := st.(*filterRecords); ok {
			if n := f.notice(); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// splitPath splits a dotted path, refusing empty segments.
func splitPath(key, p string) ([]string, error) {
	parts := strings.Split(p, ".")
	for _, s := range parts {
		if s == "" {
			return nil, &SpecError{Key: key, Msg: fmt.Sprintf("%q: want a field name, or names joined by dots (a.b)", p)}
		}
	}
	return parts, nil
}
