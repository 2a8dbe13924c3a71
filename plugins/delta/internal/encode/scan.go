package encode

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// Lexical JSON helpers. The decoder walks the payload once, driven by the
// schema; these functions validate and skip the pieces it does not
// interpret itself. Strict RFC 8259: no comments, no trailing commas, no
// NaN/Infinity, no single quotes, UTF-8 only.

// maxDepth bounds nesting so a hostile payload cannot exhaust the stack.
const maxDepth = 1000

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (d *decoder) skipWS() {
	b, i := d.buf, d.pos
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	d.pos = i
}

// literal consumes lit ("true", "false", "null") at d.pos.
func (d *decoder) literal(lit string) *valueError {
	b := d.buf
	if len(b)-d.pos < len(lit) || string(b[d.pos:d.pos+len(lit)]) != lit {
		return syntaxErr(d.pos, "invalid literal")
	}
	d.pos += len(lit)
	return nil
}

// scanString validates the string starting at d.buf[d.pos] == '"' and
// returns the bounds of its raw content and whether it contains escapes.
// d.pos ends after the closing quote.
func (d *decoder) scanString() (start, end int, esc bool, err *valueError) {
	b := d.buf
	i := d.pos + 1
	start = i
	for {
		// Fast path: runs of plain ASCII, eight bytes at a time.
		for i+8 <= len(b) {
			if hasSpecial(binary.LittleEndian.Uint64(b[i:])) {
				break
			}
			i += 8
		}
		for i < len(b) {
			c := b[i]
			if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
				break
			}
			i++
		}
		if i >= len(b) {
			return 0, 0, false, syntaxErr(i, "unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			d.pos = i + 1
			return start, i, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, 0, false, syntaxErr(i, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, 0, false, syntaxErr(i, "invalid \\u escape in string")
				}
				i += 6
			default:
				return 0, 0, false, syntaxErr(i, "invalid escape in string")
			}
		case c < 0x20:
			return 0, 0, false, syntaxErr(i, "control character in string")
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, 0, false, syntaxErr(i, "invalid UTF-8 in string")
			}
			i += size
		}
	}
}

// hasSpecial reports whether any byte of w is < 0x20, '"', '\\' or >= 0x80
// (SWAR: https://graphics.stanford.edu/~seander/bithacks.html#HasLessInWord).
func hasSpecial(w uint64) bool {
	const ones = 0x0101010101010101
	const high = 0x8080808080808080
	lt20 := (w - ones*0x20) & ^w & high
	q := w ^ (ones * '"')
	hasQ := (q - ones) & ^q & high
	bs := w ^ (ones * '\\')
	hasBS := (bs - ones) & ^bs & high
	return (lt20 | hasQ | hasBS | (w & high)) != 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	default:
		return rune(c - 'A' + 10)
	}
}

func hex4(b []byte) rune {
	return hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3])
}

// unescape appends the decoded content of a string validated by
// scanString. A lone UTF-16 surrogate escape becomes U+FFFD, as in
// encoding/json: it is valid JSON syntax but names no character.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
			continue
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2 := hex4(raw[i+2:]); r2 >= 0xDC00 && r2 <= 0xDFFF {
						dst = utf8.AppendRune(dst, utf16.DecodeRune(r, r2))
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		}
		i += 2
	}
	return dst
}

// scanNumber validates the JSON number at d.pos and moves past it.
func (d *decoder) scanNumber() (start, end int, err *valueError) {
	b := d.buf
	i := d.pos
	start = i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, 0, syntaxErr(i, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, 0, syntaxErr(i, "invalid number")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, 0, syntaxErr(i, "invalid number")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	d.pos = i
	return start, i, nil
}

// skipValue validates and skips one JSON value of any type.
func (d *decoder) skipValue() *valueError {
	d.skipWS()
	if d.pos >= len(d.buf) {
		return syntaxErr(d.pos, "unexpected end of input")
	}
	switch c := d.buf[d.pos]; {
	case c == '"':
		_, _, _, err := d.scanString()
		return err
	case c == '{':
		return d.skipObject()
	case c == '[':
		return d.skipArray()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || isDigit(c):
		_, _, err := d.scanNumber()
		return err
	default:
		return syntaxErr(d.pos, "invalid character "+quoteChar(c)+" looking for a value")
	}
}

func (d *decoder) enter() *valueError {
	d.depth++
	if d.depth > maxDepth {
		return syntaxErr(d.pos, "nesting deeper than 1000 levels")
	}
	return nil
}

func (d *decoder) skipObject() *valueError {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '{'
	d.skipWS()
	if d.pos < len(d.buf) && d.buf[d.pos] == '}' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		d.skipWS()
		if d.pos >= len(d.buf) || d.buf[d.pos] != '"' {
			return d.expected("string for object key")
		}
		if _, _, _, err := d.scanString(); err != nil {
			return err
		}
		if err := d.colon(); err != nil {
			return err
		}
		if err := d.skipValue(); err != nil {
			return err
		}
		more, err := d.next('}', "object member")
		if err != nil {
			return err
		}
		if !more {
			d.depth--
			return nil
		}
	}
}

func (d *decoder) skipArray() *valueError {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '['
	d.skipWS()
	if d.pos < len(d.buf) && d.buf[d.pos] == ']' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		if err := d.skipValue(); err != nil {
			return err
		}
		more, err := d.next(']', "array element")
		if err != nil {
			return err
		}
		if !more {
			d.depth--
			return nil
		}
	}
}

// colon consumes the ':' after an object key.
func (d *decoder) colon() *valueError {
	if d.pos < len(d.buf) && d.buf[d.pos] == ':' {
		d.pos++
		return nil
	}
	return d.colonSlow()
}

func (d *decoder) colonSlow() *valueError {
	d.skipWS()
	if d.pos >= len(d.buf) || d.buf[d.pos] != ':' {
		return d.expected("':' after object key")
	}
	d.pos++
	return nil
}

// next consumes ',' (more=true) or the closing bracket (more=false).
func (d *decoder) next(closing byte, after string) (more bool, err *valueError) {
	if d.pos < len(d.buf) && d.buf[d.pos] == ',' {
		d.pos++
		return true, nil
	}
	return d.nextSlow(closing, after)
}

func (d *decoder) nextSlow(closing byte, after string) (more bool, err *valueError) {
	d.skipWS()
	if d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ',':
			d.pos++
			return true, nil
		case closing:
			d.pos++
			return false, nil
		}
	}
	return false, d.expected("',' or '" + string(closing) + "' after " + after)
}

func (d *decoder) expected(what string) *valueError {
	if d.pos >= len(d.buf) {
		return syntaxErr(d.pos, "unexpected end of input, expected "+what)
	}
	return syntaxErr(d.pos, "invalid character "+quoteChar(d.buf[d.pos])+", expected "+what)
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	const hex = "0123456789abcdef"
	return `'\x` + string(hex[c>>4]) + string(hex[c&15]) + "'"
}

// appendCompact appends a validated JSON value with the whitespace between
// tokens removed; strings, numbers and key order stay exactly as they
// appeared.
func appendCompact(dst, v []byte) []byte {
	ws := false
	for _, c := range v {
		if isSpace(c) {
			ws = true
			break
		}
	}
	if !ws {
		return append(dst, v...)
	}
	in := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if in {
			dst = append(dst, c)
			switch c {
			case '\\':
				i++
				dst = append(dst, v[i])
			case '"':
				in = false
			}
			continue
		}
		if isSpace(c) {
			continue
		}
		if c == '"' {
			in = true
		}
		dst = append(dst, c)
	}
	return dst
}

// jsonType names the JSON type starting with c, for error messages.
func jsonType(c byte) string {
	switch {
	case c == '"':
		return "string"
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || isDigit(c):
		return "number"
	}
	return "invalid JSON"
}
