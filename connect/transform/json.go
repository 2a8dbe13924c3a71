package transform

import (
	"bytes"
	"encoding/json"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// maxDepth bounds the nesting of a payload the scanner follows, as
// encoding/json does (10000), so that a hostile payload cannot grow the
// stack without end.
const maxDepth = 10000

// member is one name/value pair of an object: the name decoded for
// comparison and, while unchanged, its literal as written (so that it is
// copied out, not escaped again); the value's bytes kept as written
// (numbers keep every digit, nested objects their order) unless a step
// replaced them. Both point into the payload or the state's arena: no
// allocation per member.
type member struct {
	name  []byte
	lit   []byte // the quoted name as written; nil: write name
	value []byte
}

// object is a JSON object's members in the order written. Only the levels
// a step touches are split into members; everything else stays bytes.
type object struct {
	members []member
}

// parseObjectInto splits raw, which must be one JSON object (whitespace
// around it allowed), into its members; the names that need unescaping are
// appended to arena. ok is false when raw is not valid JSON; isObj is false
// when it is valid JSON but not an object.
func parseObjectInto(raw []byte, o *object, arena *[]byte) (ok, isObj bool) {
	o.members = o.members[:0]
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		end := skipValue(raw, i, 0)
		return end >= 0 && skipSpace(raw, end) == len(raw), false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return skipSpace(raw, i+1) == len(raw), true
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return false, true
		}
		end := stringEnd(raw, i+1)
		if end < 0 {
			return false, true
		}
		lit := raw[i:end:end]
		name := lit[1 : len(lit)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			s, ok := decodeString(lit)
			if !ok {
				return false, true
			}
			start := len(*arena)
			*arena = append(*arena, s...)
			name = (*arena)[start:len(*arena):len(*arena)]
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false, true
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i, 1)
		if vend < 0 {
			return false, true
		}
		o.members = append(o.members, member{name: name, lit: lit, value: raw[i:vend]})
		i = skipSpace(raw, vend)
		if i >= len(raw) {
			return false, true
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return skipSpace(raw, i+1) == len(raw), true
		default:
			return false, true
		}
	}
}

// appendTo writes the object as compact-at-the-top JSON (values as they
// are) to dst.
func (o *object) appendTo(dst []byte) []byte {
	dst = append(dst, '{')
	for i, m := range o.members {
		if i > 0 {
			dst = append(dst, ',')
		}
		if m.lit != nil {
			dst = append(dst, m.lit...)
		} else {
			dst = jsonw.AppendStringLossy(dst, m.name)
		}
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}')
}

// find returns the index of the last member called name (the one
// encoding/json would keep), or -1.
func (o *object) find(name string) int {
	for i := len(o.members) - 1; i >= 0; i-- {
		if string(o.members[i].name) == name {
			return i
		}
	}
	return -1
}

// remove drops every member called name and reports whether there was one.
func (o *object) remove(name string) bool {
	n := 0
	for _, m := range o.members {
		if string(m.name) != name {
			o.members[n] = m
			n++
		}
	}
	found := n < len(o.members)
	o.members = o.members[:n]
	return found
}

// set replaces the value of the last member called name in place (keeping
// its position) or appends nm (its name and literal) with value.
func (o *object) set(nm member, value []byte) {
	if i := o.find(string(nm.name)); i >= 0 {
		o.members[i].value = value
		return
	}
	nm.value = value
	o.members = append(o.members, nm)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at i, or -1 when
// there is none.
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return -1
		}
		closing := c + 2 // '}' or ']'
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				if i = stringEnd(b, i+1); i < 0 {
					return -1
				}
				i = skipSpace(b, i)
				if i >= len(b) || b[i] != ':' {
					return -1
				}
				i = skipSpace(b, i+1)
			}
			if i = skipValue(b, i, depth+1); i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			switch {
			case i >= len(b):
				return -1
			case b[i] == ',':
				i = skipSpace(b, i+1)
			case b[i] == closing:
				return i + 1
			default:
				return -1
			}
		}
	case c == '"':
		return stringEnd(b, i+1)
	case c == '-' || c >= '0' && c <= '9':
		return numberEnd(b, i)
	case c == 't':
		return literalEnd(b, i, "true")
	case c == 'f':
		return literalEnd(b, i, "false")
	case c == 'n':
		return literalEnd(b, i, "null")
	}
	return -1
}

func literalEnd(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// stringEnd returns the index just past the closing quote of the string
// whose contents start at i, or -1.
func stringEnd(b []byte, i int) int {
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
	return -1
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// numberEnd returns the end of the JSON number starting at i, or -1.
func numberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// decodeString decodes a JSON string literal (quotes included), fast when
// it has no escapes.
func decodeString(lit []byte) (string, bool) {
	inner := lit[1 : len(lit)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(inner), true
	}
	var s string
	err := json.Unmarshal(lit, &s)
	return s, err == nil
}
