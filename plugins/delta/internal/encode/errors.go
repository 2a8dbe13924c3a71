package encode

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrInvalidRecord is wrapped by every *RecordError, so a caller can tell a
// record that cannot be made to fit the table (the batch fails, retrying
// will not help) from an I/O failure: errors.Is(err, ErrInvalidRecord).
var ErrInvalidRecord = errors.New("invalid record")

// ErrorKind classifies a RecordError.
type ErrorKind int

const (
	// ErrInvalidJSON: the payload is not valid JSON (syntax, invalid UTF-8,
	// trailing data, nesting deeper than 1000).
	ErrInvalidJSON ErrorKind = iota + 1
	// ErrNotObject: the payload is valid JSON but not an object.
	ErrNotObject
	// ErrTypeMismatch: the JSON type of a value cannot be written to the
	// column's type (a string for a long, a fractional number for an int,
	// an object for a double, ...).
	ErrTypeMismatch
	// ErrUnparsable: a string the column type could not parse (timestamp,
	// date, decimal, base64 binary).
	ErrUnparsable
	// ErrOutOfRange: a number outside the column type's range, or a decimal
	// with more digits than its precision.
	ErrOutOfRange
	// ErrNull: null in, or absence of, a non-nullable field.
	ErrNull
	// ErrInexact: a decimal with nonzero digits beyond the column's scale.
	// Storing it would round it, which the sink never does.
	ErrInexact
)

func (k ErrorKind) String() string {
	switch k {
	case ErrInvalidJSON:
		return "invalid JSON"
	case ErrNotObject:
		return "not an object"
	case ErrTypeMismatch:
		return "type mismatch"
	case ErrUnparsable:
		return "unparsable value"
	case ErrOutOfRange:
		return "out of range"
	case ErrNull:
		return "null in non-nullable field"
	case ErrInexact:
		return "would need rounding"
	}
	return "ErrorKind(" + strconv.Itoa(int(k)) + ")"
}

// RecordError reports a record that cannot be encoded. The record is not
// buffered; records added before it stay buffered.
//
// Error() renders, for value errors (every kind but ErrInvalidJSON and
// ErrNotObject), the spec's wording,
//
//	Invalid record value: field "created_at": cannot parse "yesterday" as a timestamp (record 3, offset 1042)
//
// and for payloads that are not JSON objects
//
//	Invalid JSON record: expected ',' or '}' after object member at byte 17 (record 3, offset 1042)
//
// With Topic set (the sink sets it) the parenthesis starts with
// topic "orders", .
type RecordError struct {
	// Topic is the record's topic when the caller knows it; Add leaves it
	// empty.
	Topic string
	// Index is the record's position in the current batch: the number of
	// Add calls since the last Flush or Reset, counting failed ones.
	Index int
	// Offset is the offset the caller passed to Add.
	Offset uint64
	// Field is the path of the offending value: struct fields joined by
	// dots, array indexes and map keys in brackets ("a.b", "tags[2].id",
	// "attrs[color]"); empty for whole-record errors.
	Field string
	Kind  ErrorKind
	// Detail is the message after the field, e.g.
	// `cannot parse "yesterday" as a timestamp`.
	Detail string
}

func (e *RecordError) Error() string {
	var b strings.Builder
	if e.Kind == ErrInvalidJSON || e.Kind == ErrNotObject {
		b.WriteString("Invalid JSON record: ")
	} else {
		b.WriteString("Invalid record value: ")
	}
	if e.Field != "" {
		b.WriteString("field ")
		b.WriteString(strconv.Quote(e.Field))
		b.WriteString(": ")
	}
	b.WriteString(e.Detail)
	b.WriteString(" (")
	if e.Topic != "" {
		b.WriteString("topic ")
		b.WriteString(strconv.Quote(e.Topic))
		b.WriteString(", ")
	}
	b.WriteString("record ")
	b.WriteString(strconv.Itoa(e.Index))
	b.WriteString(", offset ")
	b.WriteString(strconv.FormatUint(e.Offset, 10))
	b.WriteByte(')')
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalidRecord) true.
func (e *RecordError) Unwrap() error { return ErrInvalidRecord }

// valueError is the decoder's internal error: cheap to build, and the path
// is collected while the decoder unwinds (innermost segment first), so the
// success path never tracks where it is.
type valueError struct {
	kind   ErrorKind
	detail string
	pos    int       // byte position for ErrInvalidJSON
	path   []pathSeg // innermost first
}

type pathSeg struct {
	name  string // field name or map key
	index int    // array index when isIdx
	isIdx bool
	isKey bool // map key: rendered [k]
}

func (e *valueError) Error() string { return e.detail }

func (e *valueError) field(name string) *valueError {
	e.path = append(e.path, pathSeg{name: name})
	return e
}

func (e *valueError) index(i int) *valueError {
	e.path = append(e.path, pathSeg{index: i, isIdx: true})
	return e
}

func (e *valueError) mapKey(k string) *valueError {
	e.path = append(e.path, pathSeg{name: k, isKey: true})
	return e
}

func (e *valueError) pathString() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		s := e.path[i]
		switch {
		case s.isIdx:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		case s.isKey:
			b.WriteByte('[')
			b.WriteString(truncateForMessage(s.name))
			b.WriteByte(']')
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		}
	}
	return b.String()
}

func syntaxErr(pos int, msg string) *valueError {
	return &valueError{kind: ErrInvalidJSON, detail: msg, pos: pos}
}

func valueErr(kind ErrorKind, detail string) *valueError {
	return &valueError{kind: kind, detail: detail}
}

// maxMessageValue bounds how much of an offending value an error message
// quotes: a 1 MB string in a timestamp column must not become a 1 MB log line.
const maxMessageValue = 64

// truncateForMessage cuts s to maxMessageValue bytes on a rune boundary and
// marks the cut with "...".
func truncateForMessage(s string) string {
	if len(s) <= maxMessageValue {
		return s
	}
	cut := maxMessageValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// quoteValue renders a value for an error message: truncated, then quoted
// with Go escaping so control characters cannot break a log line.
func quoteValue(b []byte) string {
	return strconv.Quote(truncateForMessage(string(b)))
}
