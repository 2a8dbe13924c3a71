package jsonw

// AppendString appends s as a JSON string and reports whether s is valid
// UTF-8. On false it stops at the first byte that is not, and dst holds a
// partial string the caller must discard (the decoders refuse the record:
// replacing the bytes would change the data).
func AppendString[T ~string | ~[]byte](dst []byte, s T) ([]byte, bool) {
	return appendString(dst, s, false)
}

// AppendStringLossy appends s as a JSON string, writing \ufffd for each
// byte that is not UTF-8, as encoding/json does: for text that may be
// anything and must still be written (the transforms' field names).
func AppendStringLossy[T ~string | ~[]byte](dst []byte, s T) []byte {
	dst, _ = appendString(dst, s, true)
	return dst
}

const hex = "0123456789abcdef"

// plain[c] is true for a byte that stands for itself inside a JSON string
// and starts no multi-byte sequence: ASCII but controls, '"' and '\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString is encoding/json's string writer without HTML escaping.
// Runs that need no escape, UTF-8 sequences included, are copied in one
// append when they end.
func appendString[T ~string | ~[]byte](dst []byte, s T, lossy bool) ([]byte, bool) {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < 0x80 {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		n := runeLen(s, i)
		switch {
		case n == 0:
			if !lossy {
				return dst, false
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
		case n == 3 && c == 0xe2 && s[i+1] == 0x80 && s[i+2]&^1 == 0xa8:
			// U+2028 and U+2029 (E2 80 A8/A9) end a line in JavaScript.
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', '8'+s[i+2]&1)
			i += 3
			start = i
		default:
			i += n
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), true
}

// runeLen returns the length of the UTF-8 sequence starting at s[i] (a
// byte >= 0x80), or 0 where it is not valid UTF-8 (a stray continuation
// byte, an overlong form, a surrogate, above U+10FFFF, or cut short): what
// utf8.DecodeRune calls RuneError of size 1, without converting a []byte
// to a string for it.
func runeLen[T ~string | ~[]byte](s T, i int) int {
	c := s[i]
	lo, hi := byte(0x80), byte(0xbf) // the second byte's range
	n := 0
	switch {
	case c < 0xc2:
		return 0
	case c < 0xe0:
		n = 2
	case c < 0xf0:
		n = 3
		if c == 0xe0 {
			lo = 0xa0
		} else if c == 0xed {
			hi = 0x9f
		}
	case c < 0xf5:
		n = 4
		if c == 0xf0 {
			lo = 0x90
		} else if c == 0xf4 {
			hi = 0x8f
		}
	default:
		return 0
	}
	if len(s)-i < n {
		return 0
	}
	if b := s[i+1]; b < lo || b > hi {
		return 0
	}
	for j := i + 2; j < i+n; j++ {
		if s[j]&0xc0 != 0x80 {
			return 0
		}
	}
	return n
}
