package jsonscan

// Valid reports whether p is one JSON value, exactly as json.Valid
// does (the same grammar, no UTF-8 check inside strings, the same nesting
// limit), at several times its speed: it is the runtime's check of every
// schema = "json" payload, the largest cost of a batch in the runtime's
// own process. json.Valid runs a byte-at-a-time state machine through
// function values; this is one loop with a stack of open containers.
// FuzzValid holds the two equal.
func Valid(p []byte) bool {
	var buf [64]byte
	stack := buf[:0] // '{' or '[' per open container
	i := SkipSpace(p, 0)
	for {
		// A value starts at i.
		if i >= len(p) {
			return false
		}
		switch c := p[i]; {
		case c == '{' || c == '[':
			if len(stack) == MaxNesting {
				return false
			}
			stack = append(stack, c)
			i = SkipSpace(p, i+1)
			if i < len(p) && p[i] == c+2 { // '}' or ']': empty
				i++
				stack = stack[:len(stack)-1]
				break
			}
			if c == '{' {
				if i = objectKey(p, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = StringEnd(p, i+1); i < 0 {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = NumberEnd(p, i); i < 0 {
				return false
			}
		case c == 't':
			if i = LiteralEnd(p, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = LiteralEnd(p, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = LiteralEnd(p, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended at i: close containers, or move to the next value.
		for {
			i = SkipSpace(p, i)
			if len(stack) == 0 {
				return i == len(p)
			}
			if i >= len(p) {
				return false
			}
			open := stack[len(stack)-1]
			if p[i] == open+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if p[i] != ',' {
				return false
			}
			i = SkipSpace(p, i+1)
			if open == '{' {
				if i = objectKey(p, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// MaxNesting is encoding/json's limit on nested objects and arrays.
const MaxNesting = 10000

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(p []byte, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t') {
		i++
	}
	return i
}

// objectKey checks `"key" :` from i and returns where the value starts,
// or -1.
func objectKey(p []byte, i int) int {
	if i >= len(p) || p[i] != '"' {
		return -1
	}
	if i = StringEnd(p, i+1); i < 0 {
		return -1
	}
	i = SkipSpace(p, i)
	if i >= len(p) || p[i] != ':' {
		return -1
	}
	return SkipSpace(p, i+1)
}

// plainByte marks the bytes a string holds as they are: not a control
// character, a quote or a backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// StringEnd returns the index after the closing quote of the string whose
// contents start at i, or -1.
func StringEnd(p []byte, i int) int {
	for {
		for i < len(p) && plainByte[p[i]] {
			i++
		}
		if i >= len(p) {
			return -1
		}
		switch p[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(p) {
				return -1
			}
			switch p[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(p) {
					return -1
				}
				for _, h := range p[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

// NumberEnd returns the index after the number starting at i, or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func NumberEnd(p []byte, i int) int {
	if p[i] == '-' {
		i++
	}
	switch {
	case i < len(p) && p[i] == '0':
		i++
	case i < len(p) && '1' <= p[i] && p[i] <= '9':
		i = digits(p, i)
	default:
		return -1
	}
	if i < len(p) && p[i] == '.' {
		if j := digits(p, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		j := digits(p, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(p []byte, i int) int {
	for i < len(p) && '0' <= p[i] && p[i] <= '9' {
		i++
	}
	return i
}

// LiteralEnd returns the index after lit (true, false or null) at i, or
// -1 when p does not hold it there.
func LiteralEnd(p []byte, i int, lit string) int {
	if len(p)-i >= len(lit) && string(p[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// ValueEnd returns the end of the JSON value starting at i, or -1 when
// there is none.
func ValueEnd(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= MaxNesting {
			return -1
		}
		closing := c + 2 // '}' or ']'
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				if i = StringEnd(b, i+1); i < 0 {
					return -1
				}
				i = SkipSpace(b, i)
				if i >= len(b) || b[i] != ':' {
					return -1
				}
				i = SkipSpace(b, i+1)
			}
			if i = ValueEnd(b, i, depth+1); i < 0 {
				return -1
			}
			i = SkipSpace(b, i)
			switch {
			case i >= len(b):
				return -1
			case b[i] == ',':
				i = SkipSpace(b, i+1)
			case b[i] == closing:
				return i + 1
			default:
				return -1
			}
		}
	case c == '"':
		return StringEnd(b, i+1)
	case c == '-' || c >= '0' && c <= '9':
		return NumberEnd(b, i)
	case c == 't':
		return LiteralEnd(b, i, "true")
	case c == 'f':
		return LiteralEnd(b, i, "false")
	case c == 'n':
		return LiteralEnd(b, i, "null")
	}
	return -1
}
