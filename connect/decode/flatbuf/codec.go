package flatbuf

import (
	"errors"
	"fmt"
	"os"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// errInternal marks a panic recovered at the boundary: a bug, which the
// fuzz target looks for.
var errInternal = errors.New("internal error decoding")

// Codec decodes FlatBuffers of one root table through a binary schema. It
// is safe for concurrent use.
type Codec struct {
	s *schema
}

var _ decode.Codec = (*Codec)(nil)

// Compile reads a binary schema (a .bfbs file's bytes, as `flatc --binary
// --schema` writes it) and returns the Codec of the table rootType: its
// full name ("shop.Order") or a name unique without its namespace
// ("Order"). An empty rootType is the schema's root_type.
func Compile(bfbs []byte, rootType string) (*Codec, error) {
	s, err := loadSchema(bfbs, rootType)
	if err != nil {
		return nil, err
	}
	return &Codec{s: s}, nil
}

// Load is Compile of the file at path (flatbuffer_schema_path).
func Load(path, rootType string) (*Codec, error) {
	bfbs, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Compile(bfbs, rootType)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// RootType is the full name of the table the Codec decodes.
func (c *Codec) RootType() string { return c.s.root.name }

// AppendJSON implements decode.Codec: the JSON object of the root table
// of payload, a FlatBuffer without a size prefix. Every error is a
// *decode.RecordError, and dst comes back as it was.
func (c *Codec) AppendJSON(dst, payload []byte) (out []byte, err error) {
	// Every read is bounds-checked (buffer.go); this is the last line, so
	// that a bug in the walk is one record's error and not the runtime's
	// crash.
	defer func() {
		if r := recover(); r != nil {
			out, err = dst, decode.Recordf("flatbuffer %s: %w: %v", c.s.root.name, errInternal, r)
		}
	}()
	b := buffer(payload)
	w := walker{b: b, out: dst, limit: len(dst) + min(outputFloor+c.s.expansion*len(payload), outputMax)}
	if err := b.check("root offset", 0, 4); err != nil {
		return dst, decode.Recordf("flatbuffer %s: %v", c.s.root.name, err)
	}
	if err := w.table(c.s.root, b.deref(0)); err != nil {
		return dst, decode.Recordf("flatbuffer %s: %v", c.s.root.name, err)
	}
	return w.out, nil
}
