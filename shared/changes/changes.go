package changes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/picomq/heavy-sinks/shared/jsonscan"
)

// Format is how a record says what it changes.
type Format uint8

const (
	// OpField: the record is the row, plus one member (OpField, "_op" by
	// default) naming the change, as laminardb's changelog does.
	OpField Format = iota + 1
	// Debezium: the record is a Debezium change event, {"before", "after",
	// "op", ...}, bare or inside the JSON converter's {"schema", "payload"}.
	Debezium
)

// ParseFormat reads the change_format key's value.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "op_field":
		return OpField, nil
	case "debezium":
		return Debezium, nil
	}
	return 0, fmt.Errorf("%q: want op_field or debezium", s)
}

func (f Format) String() string {
	switch f {
	case OpField:
		return "op_field"
	case Debezium:
		return "debezium"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// DefaultOpField is the member that names the change with OpField.
const DefaultOpField = "_op"

// Config says how to read change records.
type Config struct {
	Format     Format
	OpField    string   // OpField only: the member naming the change
	KeyColumns []string // the key, in order; at least one
}

// ParseKeyColumns reads a comma-separated key_columns value: names
// trimmed, none empty, none twice.
func ParseKeyColumns(s string) ([]string, error) {
	var cols []string
	seen := map[string]bool{}
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			return nil, fmt.Errorf("%q: want comma-separated column names, none empty", s)
		}
		if seen[c] {
			return nil, fmt.Errorf("%q: column %q named twice", s, c)
		}
		seen[c] = true
		cols = append(cols, c)
	}
	return cols, nil
}

// Op is what a change does to its key's row.
type Op uint8

const (
	// Upsert replaces the key's row with Row (inserting it when absent).
	Upsert Op = iota + 1
	// Delete removes the key's row (nothing when absent).
	Delete
)

func (o Op) String() string {
	switch o {
	case Upsert:
		return "upsert"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Change is one record read as a change.
type Change struct {
	Op Op
	// Row is the row to write, one JSON object: with OpField the record
	// without its op member, with Debezium the event's "after". nil for a
	// Delete.
	Row []byte
	// Key holds each key column's JSON value as written, in KeyColumns
	// order; never null. Each sink compares keys in its columns' types
	// (the same JSON value may be spelled several ways).
	Key [][]byte
}

// Error is a record error: the record cannot be read as a change. Sinks
// reject the record (a dead letter, or FATAL with errors_tolerance =
// "none"); retrying cannot help.
type Error struct{ Reason string }

func (e *Error) Error() string { return e.Reason }

func recordErr(format string, args ...any) error {
	return &Error{Reason: fmt.Sprintf(format, args...)}
}

// Parse reads one record: its payload (empty for a tombstone) and its Kafka
// key (nil when it has none). A tombstone deletes the key the record key
// holds (a JSON object with the key columns, bare or as the JSON
// converter's {"schema", "payload"}), in either format. Every error is an
// *Error.
func (c *Config) Parse(payload, recordKey []byte) (Change, error) {
	if len(bytes.TrimSpace(payload)) == 0 {
		if recordKey == nil {
			return Change{}, recordErr("a tombstone (empty payload) without a record key: no key to delete")
		}
		key, err := c.keyFrom(recordKey, "the record key")
		if err != nil {
			return Change{}, err
		}
		return Change{Op: Delete, Key: key}, nil
	}
	if !jsonscan.Valid(payload) {
		return Change{}, recordErr("the payload is not valid JSON")
	}
	switch c.Format {
	case OpField:
		return c.parseOpField(payload)
	case Debezium:
		return c.parseDebezium(payload, recordKey)
	}
	return Change{}, fmt.Errorf("changes: unknown format %v", c.Format)
}

// opOf maps a change letter to an Op: c, r, i, u (any case: Debezium's
// create, read, update; laminardb's I, U, r) upsert; d deletes.
func opOf(v []byte, where string) (Op, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return 0, recordErr("%s is %s: want a string, one of c, r, u, d (or I, U, D)", where, truncate(v))
	}
	switch s {
	case "c", "C", "r", "R", "i", "I", "u", "U":
		return Upsert, nil
	case "d", "D":
		return Delete, nil
	case "t":
		return 0, recordErr("%s is %q: a truncate is not a change of one key", where, s)
	}
	return 0, recordErr("%s is %q: want one of c, r, u, d (or I, U, D)", where, s)
}

func (c *Config) parseOpField(payload []byte) (Change, error) {
	members, ok := objectMembers(payload)
	if !ok {
		return Change{}, recordErr("the payload is not a JSON object")
	}
	opAt := -1
	for i, m := range members {
		if m.name == c.OpField {
			opAt = i
		}
	}
	if opAt < 0 {
		return Change{}, recordErr("the payload has no %q field naming the change", c.OpField)
	}
	op, err := opOf(members[opAt].value, fmt.Sprintf("the %q field", c.OpField))
	if err != nil {
		return Change{}, err
	}
	key, err := c.keyOf(members, "the payload")
	if err != nil {
		return Change{}, err
	}
	ch := Change{Op: op, Key: key}
	if op == Upsert {
		ch.Row = withoutMember(payload, members, c.OpField)
	}
	return ch, nil
}

func (c *Config) parseDebezium(payload, recordKey []byte) (Change, error) {
	members, ok := unwrapConverter(payload)
	if !ok {
		return Change{}, recordErr("the payload is not a JSON object")
	}
	var opV, before, after []byte
	for _, m := range members {
		switch m.name {
		case "op":
			opV = m.value
		case "before":
			before = m.value
		case "after":
			after = m.value
		}
	}
	if opV == nil {
		return Change{}, recordErr("the payload has no \"op\" field: not a Debezium change event")
	}
	op, err := opOf(opV, "the Debezium \"op\"")
	if err != nil {
		return Change{}, err
	}
	if op == Upsert {
		am, ok := objectMembers(after)
		if !ok {
			return Change{}, recordErr("the Debezium \"after\" of an upsert is %s: want the row, an object", truncate(after))
		}
		key, err := c.keyOf(am, "\"after\"")
		if err != nil {
			return Change{}, err
		}
		return Change{Op: Upsert, Row: after, Key: key}, nil
	}
	// A delete names its key in "before" (with the key columns at least,
	// whatever the replica identity); without it, the record key.
	if bm, ok := objectMembers(before); ok {
		if key, err := c.keyOf(bm, "\"before\""); err == nil {
			return Change{Op: Delete, Key: key}, nil
		} else if recordKey == nil {
			return Change{}, err
		}
	}
	if recordKey == nil {
		return Change{}, recordErr("a Debezium delete without \"before\" or a record key: no key to delete")
	}
	key, err := c.keyFrom(recordKey, "the record key")
	if err != nil {
		return Change{}, err
	}
	return Change{Op: Delete, Key: key}, nil
}

// keyFrom reads the key columns from a JSON object (a record key, bare or
// as the JSON converter writes it).
func (c *Config) keyFrom(obj []byte, where string) ([][]byte, error) {
	if !jsonscan.Valid(obj) {
		return nil, recordErr("%s is not valid JSON: want an object with the key columns", where)
	}
	members, ok := unwrapConverter(obj)
	if !ok {
		return nil, recordErr("%s is %s: want an object with the key columns", where, truncate(obj))
	}
	return c.keyOf(members, where)
}

func (c *Config) keyOf(members []member, where string) ([][]byte, error) {
	key := make([][]byte, len(c.KeyColumns))
	for i, col := range c.KeyColumns {
		for _, m := range members {
			if m.name == col {
				key[i] = m.value
			}
		}
		switch {
		case key[i] == nil:
			return nil, recordErr("%s has no key column %q", where, col)
		case string(key[i]) == "null":
			return nil, recordErr("key column %q is null in %s", col, where)
		case key[i][0] == '{' || key[i][0] == '[':
			return nil, recordErr("key column %q is %s in %s: want a string, number or boolean", col, truncate(key[i]), where)
		}
	}
	return key, nil
}

// member is one name/value pair of an object, the value as written.
type member struct {
	name  string
	start int // where the member's name starts in the object
	end   int // after the member's value
	value []byte
}

// objectMembers splits raw (valid JSON) into its members when it is an
// object; names are decoded. ok is false for anything else.
func objectMembers(raw []byte) (members []member, ok bool) {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	i = jsonscan.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil, true
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		start := i
		nameEnd := jsonscan.StringEnd(raw, i+1)
		if nameEnd < 0 {
			return nil, false
		}
		var name string
		if bytes.IndexByte(raw[i:nameEnd], '\\') >= 0 {
			if json.Unmarshal(raw[i:nameEnd], &name) != nil {
				return nil, false
			}
		} else {
			name = string(raw[i+1 : nameEnd-1])
		}
		i = jsonscan.SkipSpace(raw, nameEnd)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = jsonscan.SkipSpace(raw, i+1)
		vend := jsonscan.ValueEnd(raw, i, 1)
		if vend < 0 {
			return nil, false
		}
		members = append(members, member{name: name, start: start, end: vend, value: raw[i:vend]})
		i = jsonscan.SkipSpace(raw, vend)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = jsonscan.SkipSpace(raw, i+1)
		case '}':
			return members, true
		default:
			return nil, false
		}
	}
}

// unwrapConverter returns the members of obj, or of its "payload" when obj
// is the JSON converter's envelope {"schema": ..., "payload": ...}.
func unwrapConverter(obj []byte) ([]member, bool) {
	members, ok := objectMembers(obj)
	if !ok || len(members) != 2 {
		return members, ok
	}
	var payload []byte
	hasSchema := false
	for _, m := range members {
		switch m.name {
		case "schema":
			hasSchema = true
		case "payload":
			payload = m.value
		}
	}
	if !hasSchema || payload == nil {
		return members, ok
	}
	return objectMembers(payload)
}

// withoutMember returns obj without its members called name (the last
// one named the change; JSON allows several), as a new slice.
func withoutMember(obj []byte, members []member, name string) []byte {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	for _, m := range members {
		if m.name == name {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, obj[m.start:m.end]...)
	}
	return append(out, '}')
}

// truncate shows at most 64 bytes of a value in an error.
func truncate(v []byte) string {
	if v == nil {
		return "absent"
	}
	if len(v) > 64 {
		return string(v[:64]) + "…"
	}
	return string(v)
}
