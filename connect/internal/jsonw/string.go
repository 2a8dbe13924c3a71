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
		// The UTF-8 sequence c starts: n bytes, the next one in second[...]
		// (written here rather than in a function: this runs per byte of
		// non-ASCII text, and a call does not inline).
		x := lead[c]
		n := int(x & 7)
		r := second[x>>4]
		switch {
		case n == 0 || len(s)-i < n || s[i+1] < r.lo || s[i+1] > r.hi ||
			n > 2 && s[i+2]&0xc0 != 0x80 || n > 3 && s[i+3]&0xc0 != 0x80:
			// Not UTF-8 (a stray continuation byte, an overlong form, a
			// surrogate, above U+10FFFF, or cut short): what
			// utf8.DecodeRune calls RuneError of size 1.
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

// lead[c] is, for a byte c >= 0x80, the length of the sequence it starts
// (0: it starts none) and, in the high nibble, the index in second of the
// range its next byte must be in (utf8's first and acceptRanges tables).
var lead = func() (t [256]uint8) {
	for c := 0xc2; c < 0xe0; c++ {
		t[c] = 2
	}
	for c := 0xe0; c < 0xf0; c++ {
		t[c] = 3
	}
	t[0xe0] |= 1 << 4
	t[0xed] |= 2 << 4
	for c := 0xf0; c < 0xf5; c++ {
		t[c] = 4
	}
	t[0xf0] |= 3 << 4
	t[0xf4] |= 4 << 4
	return t
}()

var second = [5]struct{ lo, hi byte }{
	{0x80, 0xbf},
	{0xa0, 0xbf}, // after E0: no overlong 3-byte forms
	{0x80, 0x9f}, // after ED: no surrogates
	{0x90, 0xbf}, // after F0: no overlong 4-byte forms
	{0x80, 0x8f}, // after F4: nothing above U+10FFFF
}
