package rsjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	return walk(p)
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
