package rsparquet

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
)

// Record is one record to encode. Key and Payload may be borrowed: Encode
// copies them into the file and keeps no reference after it returns.
type Record struct {
	Offset    uint64
	Timestamp int64  // epoch milliseconds
	Key       []byte // nil when the record has no key (pico_key NULL)
	Payload   []byte
}

// Chunk is the rows of one Parquet file: records of one topic partition
// and the created_at every row of the chunk carries.
type Chunk struct {
	Topic     string
	Partition uint32
	CreatedAt string // RFC 3339
	Records   []Record
}

// Schema returns the Parquet schema of a layout: one column per layout
// column, in layout order, which is the order of the COPY column list.
//
//   - VARCHAR columns are BYTE_ARRAY with the String logical type.
//   - pico_partition is a plain INT64.
//   - payload is BYTE_ARRAY without annotation for varbyte, a String for text.
//   - pico_key is the only optional column (NULL when a record has no key).
//
// pico_topic and created_at hold one value per chunk and are dictionary
// encoded; every other column is PLAIN. The writer default for byte arrays,
// DELTA_LENGTH_BYTE_ARRAY, is avoided on purpose: PLAIN and dictionary pages
// are what every Parquet reader, Redshift's included, handles.
func Schema(l *rsql.Layout) *parquet.Schema {
	fields := make(orderedGroup, len(l.Columns))
	for i, c := range l.Columns {
		var n parquet.Node
		switch c.Family {
		case rsql.FamilyBigint:
			n = parquet.Leaf(parquet.Int64Type)
		case rsql.FamilyVarbyte:
			n = parquet.Leaf(parquet.ByteArrayType)
		default:
			n = parquet.String()
		}
		var enc encoding.Encoding = &parquet.Plain
		if c.ID == rsql.Topic || c.ID == rsql.CreatedAt {
			enc = &parquet.RLEDictionary
		}
		n = parquet.Encoded(n, enc)
		if c.Nullable {
			n = parquet.Optional(n)
		} else {
			n = parquet.Required(n)
		}
		fields[i] = &field{Node: n, name: c.Name}
	}
	return parquet.NewSchema("picomq_redshift", fields)
}

// orderedGroup is a Parquet group whose fields keep the order they were
// given in. parquet.Group is a map and sorts its fields by name, which would
// break the positional mapping COPY relies on.
type orderedGroup []parquet.Field

func (g orderedGroup) ID() int                     { return 0 }
func (g orderedGroup) String() string              { return "orderedGroup" }
func (g orderedGroup) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Fields() []parquet.Field     { return g }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }
func (g orderedGroup) GoType() reflect.Type        { return goStructOf(g) }

// field is one named column of an orderedGroup.
type field struct {
	parquet.Node
	name string
}

func (f *field) Name() string                           { return f.name }
func (f *field) Value(base reflect.Value) reflect.Value { return base.FieldByName(exported(f.name)) }

// goStructOf mirrors the group as a Go struct, which parquet-go asks for
// when it reflects on a schema; the encoder itself writes rows directly.
func goStructOf(g orderedGroup) reflect.Type {
	fs := make([]reflect.StructField, len(g))
	for i, f := range g {
		fs[i] = reflect.StructField{
			Name: exported(f.Name()),
			Type: f.GoType(),
			Tag:  reflect.StructTag(`parquet:` + strconv.Quote(f.Name())),
		}
	}
	return reflect.StructOf(fs)
}

// exported turns a column name (lower case, digits, underscores) into an
// exported Go identifier.
func exported(name string) string {
	var b strings.Builder
	b.WriteString("F_")
	for _, r := range name {
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Encoder turns chunks into Parquet files with zstd compression and v1 data
// pages, one row group per file. It reuses its buffers between calls and is
// not safe for concurrent use.
type Encoder struct {
	layout *rsql.Layout
	writer *parquet.Writer
	out    bytes.Buffer
	values []parquet.Value
	rows   []parquet.Row
	arena  []byte
}

// NewEncoder returns an encoder for the layout's columns.
func NewEncoder(l *rsql.Layout) *Encoder {
	e := &Encoder{layout: l}
	e.writer = parquet.NewWriter(&e.out, Schema(l),
		parquet.Compression(&parquet.Zstd),
		parquet.DataPageVersion(1),
		// Page bounds of the payload would copy up to two payloads per page
		// into the page index; nobody filters on payload.
		parquet.SkipPageBounds("payload"),
	)
	return e
}

// Encode writes c as one Parquet file and returns its bytes, which stay
// valid until the next call. c must have passed Check: Encode does not
// measure values against column limits.
func (e *Encoder) Encode(c Chunk) ([]byte, error) {
	l := e.layout
	ncol := len(l.Columns)
	n := len(c.Records)

	// Derived strings (ids, offsets, timestamps, base64 keys) go into one
	// arena sized up front, so the chunk costs a handful of allocations.
	size := n * (len(c.Topic) + 3 + 10 + 20) // ids
	if l.Has(rsql.Offset) {
		size += n * 40
	}
	if l.Has(rsql.Key) {
		for i := range c.Records {
			size += base64.StdEncoding.EncodedLen(len(c.Records[i].Key))
		}
	}
	if cap(e.arena) < size {
		e.arena = make([]byte, 0, size)
	}
	arena := e.arena[:0]
	if cap(e.values) < n*ncol {
		e.values = make([]parquet.Value, n*ncol)
	}
	values := e.values[:n*ncol]
	if cap(e.rows) < n {
		e.rows = make([]parquet.Row, n)
	}
	rows := e.rows[:n]
	// Values point into borrowed payloads and keys: drop them on every
	// return, the error paths included.
	defer func() { clear(values); clear(rows) }()

	topic := []byte(c.Topic)
	createdAt := []byte(c.CreatedAt)
	for i := range c.Records {
		r := &c.Records[i]
		row := values[i*ncol : (i+1)*ncol : (i+1)*ncol]
		for col, spec := range l.Columns {
			var v parquet.Value
			switch spec.ID {
			case rsql.ID:
				start := len(arena)
				arena = append(arena, c.Topic...)
				arena = append(arena, ':')
				arena = strconv.AppendUint(arena, uint64(c.Partition), 10)
				arena = append(arena, ':')
				arena = strconv.AppendUint(arena, r.Offset, 10)
				v = parquet.ByteArrayValue(arena[start:len(arena):len(arena)])
			case rsql.Offset:
				start := len(arena)
				arena = strconv.AppendUint(arena, r.Offset, 10)
				v = parquet.ByteArrayValue(arena[start:len(arena):len(arena)])
			case rsql.Timestamp:
				start := len(arena)
				arena = strconv.AppendInt(arena, r.Timestamp, 10)
				v = parquet.ByteArrayValue(arena[start:len(arena):len(arena)])
			case rsql.Topic:
				v = parquet.ByteArrayValue(topic)
			case rsql.Partition:
				v = parquet.Int64Value(int64(c.Partition))
			case rsql.Key:
				if r.Key == nil {
					row[col] = parquet.NullValue().Level(0, 0, col)
					continue
				}
				start := len(arena)
				arena = base64.StdEncoding.AppendEncode(arena, r.Key)
				v = parquet.ByteArrayValue(arena[start:len(arena):len(arena)])
			case rsql.Payload:
				p := r.Payload
				if p == nil {
					p = []byte{} // a present, empty payload; never NULL
				}
				v = parquet.ByteArrayValue(p)
			case rsql.CreatedAt:
				v = parquet.ByteArrayValue(createdAt)
			default:
				return nil, fmt.Errorf("rsparquet: column %s has no encoder", spec.Name)
			}
			def := 0
			if spec.Nullable {
				def = 1
			}
			row[col] = v.Level(0, def, col)
		}
		rows[i] = row
	}
	e.arena = arena[:0]

	e.out.Reset()
	e.writer.Reset(&e.out)
	if _, err := e.writer.WriteRows(rows); err != nil {
		return nil, fmt.Errorf("rsparquet: write rows: %w", err)
	}
	if err := e.writer.Close(); err != nil {
		return nil, fmt.Errorf("rsparquet: close file: %w", err)
	}
	return e.out.Bytes(), nil
}

// validText reports whether p is UTF-8 text a Redshift VARCHAR can hold.
func validText(p []byte) (ok bool, why string) {
	if !utf8.Valid(p) {
		return false, "is not valid UTF-8"
	}
	if bytes.IndexByte(p, 0) >= 0 {
		return false, "contains a NUL character, which Redshift VARCHAR cannot store"
	}
	return true, ""
}
