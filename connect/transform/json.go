package transform

import (
	"bytes"
	"encoding/json"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
	"github.com/picomq/heavy-sinks/shared/jsonscan"
)

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
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		end := jsonscan.ValueEnd(raw, i, 0)
		return end >= 0 && jsonscan.SkipSpace(raw, end) == len(raw), false
	}
	i = jsonscan.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return jsonscan.SkipSpace(raw, i+1) == len(raw), true
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return false, true
		}
		end := jsonscan.StringEnd(raw, i+1)
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
		i = jsonscan.SkipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false, true
		}
		i = jsonscan.SkipSpace(raw, i+1)
		vend := jsonscan.ValueEnd(raw, i, 1)
		if vend < 0 {
			return false, true
		}
		o.members = append(o.members, member{name: name, lit: lit, value: raw[i:vend]})
		i = jsonscan.SkipSpace(raw, vend)
		if i >= len(raw) {
			return false, true
		}
		switch raw[i] {
		case ',':
			i = jsonscan.SkipSpace(raw, i+1)
		case '}':
			return jsonscan.SkipSpace(raw, i+1) == len(raw), true
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
