package rsjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of JSON_PARSE under Redshift's default settings.
const (
	// MaxDepth is how deep arrays and objects may nest; the outermost
	// array or object is at depth 1.
	MaxDepth = 1000
	// MaxString is the most bytes one string value may hold (attribute
	// names are not limited by it), the VARCHAR limit.
	MaxString = 65535
)

// Kind classifies why JSON_PARSE would refuse a payload.
type Kind int

const (
	// Syntax: not one JSON value, or not valid UTF-8.
	Syntax Kind = iota + 1
	// Duplicate: an object names one attribute twice.
	Duplicate
	// Depth: arrays and objects nested deeper than MaxDepth.
	Depth
	// StringLength: a string value longer than MaxString bytes.
	StringLength
	// NUL: a string (value or attribute name) holding U+0000, written
	// \u0000: SUPER strings are VARCHARs, which cannot store NUL.
	NUL
	// Surrogate: a string escaping half of a UTF-16 surrogate pair
	// (\ud800-\udfff) without the other half: valid JSON, but no text.
	Surrogate
	// Number: a number SUPER cannot hold as written: an integer of more
	// than 38 digits (DECIMAL's precision), or one beyond float8's range
	// (it would become infinite, or zero).
	Number
)

// Error says why JSON_PARSE would refuse a payload.
type Error struct {
	Kind   Kind
	Detail string
}

func (e *Error) Error() string { return e.Detail }

// Check returns nil when JSON_PARSE accepts p under Redshift's default
// settings, else an *Error.
func Check(p []byte) error {
	if !utf8.Valid(p) {
		return &Error{Kind: Syntax, Detail: "is not valid UTF-8"}
	}
	if !json.Valid(p) {
		if len(bytes.TrimSpace(p)) == 0 {
			return &Error{Kind: Syntax, Detail: "is empty, not a JSON value"}
		}
		return &Error{Kind: Syntax, Detail: "is not a JSON value"}
	}
	if loneSurrogate(p) {
		// encoding/json would decode it to U+FFFD, so walk cannot see it.
		return &Error{Kind: Surrogate, Detail: `has a string escaping half of a UTF-16 surrogate pair (\ud800-\udfff) without the other half`}
	}
	return walk(p)
}

// loneSurrogate reports whether a string of p, which json.Valid accepted,
// escapes a UTF-16 surrogate that is not part of a high-low pair.
// JSON_PARSE refuses it.
func loneSurrogate(p []byte) bool {
	in := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\':
			if p[i+1] != 'u' {
				i++ // a one-character escape
				continue
			}
			r := hex4(p[i+2 : i+6])
			i += 5
			switch {
			case r >= 0xD800 && r < 0xDC00:
				if i+6 < len(p) && p[i+1] == '\\' && p[i+2] == 'u' {
					if lo := hex4(p[i+3 : i+7]); lo >= 0xDC00 && lo < 0xE000 {
						i += 6
						continue
					}
				}
				return true
			case r >= 0xDC00 && r < 0xE000:
				return true
			}
		}
	}
	return false
}

// hex4 is the value of four hex digits, which json.Valid checked.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// numberError says why SUPER cannot hold n as written, or returns nil. An
// integer is kept as DECIMAL up to 38 digits; any other number as float8,
// which must neither overflow nor round a nonzero value to zero. Digits
// float8 cannot keep are rounded as in any JSON reader; that is not
// checked.
func numberError(n json.Number) *Error {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if d := len(strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")); d > 38 {
			return &Error{Kind: Number, Detail: fmt.Sprintf("has an integer of %d digits, over the 38 a SUPER number holds", d)}
		}
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || (f == 0 && strings.ContainsAny(strings.SplitN(strings.ToLower(s), "e", 2)[0], "123456789")) {
		return &Error{Kind: Number, Detail: fmt.Sprintf("has the number %s, beyond the range of the float8 a SUPER number is", trim(s))}
	}
	return nil
}

// frame is one open array or object.
type frame struct {
	object  bool
	wantKey bool                // an object's next token is a key or '}'
	seen    map[string]struct{} // an object's attribute names so far
}

// walk checks the Redshift rules on p, which json.Valid accepted, so every
// token the decoder returns is where the grammar allows it.
func walk(p []byte) error {
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber() // numbers are not converted, only passed over
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// json.Valid and the decoder share one grammar.
			return &Error{Kind: Syntax, Detail: "is not a JSON value: " + err.Error()}
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			top := &stack[n-1]
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				continue
			}
			key := tok.(string)
			if strings.IndexByte(key, 0) >= 0 {
				return nulError()
			}
			if _, dup := top.seen[key]; dup {
				return &Error{Kind: Duplicate, Detail: fmt.Sprintf("has the attribute %q twice in one object", trim(key))}
			}
			top.seen[key] = struct{}{}
			top.wantKey = false
			continue
		}
		// A value, or the ']' that closes an array.
		if tok == json.Delim(']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true // after this value: a key or '}'
		}
		switch v := tok.(type) {
		case json.Delim: // '{' or '['
			if len(stack) == MaxDepth {
				return &Error{Kind: Depth, Detail: fmt.Sprintf("nests arrays and objects deeper than %d levels", MaxDepth)}
			}
			if v == '{' {
				stack = append(stack, frame{object: true, wantKey: true, seen: map[string]struct{}{}})
			} else {
				stack = append(stack, frame{})
			}
		case json.Number:
			if e := numberError(v); e != nil {
				return e
			}
		case string:
			if strings.IndexByte(v, 0) >= 0 {
				return nulError()
			}
			if len(v) > MaxString {
				return &Error{Kind: StringLength, Detail: fmt.Sprintf("has a string value of %d bytes, over the %d bytes one string in a SUPER value holds", len(v), MaxString)}
			}
		}
	}
}

func nulError() *Error {
	return &Error{Kind: NUL, Detail: `has a string holding \u0000 (NUL), which Redshift strings cannot store`}
}

// trim shortens an attribute name for a message.
func trim(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}
