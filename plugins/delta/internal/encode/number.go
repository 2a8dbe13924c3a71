package encode

import (
	"math"
	"math/bits"
)

// decNum is an exact decimal number: value = ±digits × 10^exp, digits an
// integer without leading or trailing zeros (empty for zero). JSON numbers
// and numeric strings for decimal columns are parsed into it so no value
// ever passes through a float.
type decNum struct {
	neg    bool
	digits []byte // reused scratch
	exp    int
}

// maxExp saturates exponents: anything beyond is out of range (or zero)
// for every type, and saturating keeps the arithmetic below overflow-free.
const maxExp = 1 << 20

// parseDecimal parses [+-]?(digits[.digits*]|.digits)([eE][+-]?digits)? and
// reports whether s had that shape. JSON numbers are a subset.
func (d *decNum) parseDecimal(s []byte) bool {
	d.neg, d.digits, d.exp = false, d.digits[:0], 0
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		d.neg = s[i] == '-'
		i++
	}
	nd := 0 // digits seen (int + frac)
	frac := 0
	for ; i < len(s) && isDigit(s[i]); i++ {
		nd++
		if s[i] == '0' && len(d.digits) == 0 {
			continue // leading zero
		}
		d.digits = append(d.digits, s[i])
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && isDigit(s[i]); i++ {
			nd++
			frac++
			if s[i] == '0' && len(d.digits) == 0 {
				continue
			}
			d.digits = append(d.digits, s[i])
		}
	}
	if nd == 0 {
		return false
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			eneg = s[i] == '-'
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for ; i < len(s) && isDigit(s[i]); i++ {
			if exp < maxExp {
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return false
	}
	// Leading zeros after the point ("0.001") were skipped but still count
	// as fraction positions; frac already includes them.
	d.exp = exp - frac
	for len(d.digits) > 0 && d.digits[len(d.digits)-1] == '0' {
		d.digits = d.digits[:len(d.digits)-1]
		d.exp++
	}
	if len(d.digits) == 0 {
		d.exp = 0
		d.neg = false // -0 is 0
	}
	d.exp = max(-2*maxExp, min(2*maxExp, d.exp))
	return true
}

// unscaled returns |value| × 10^scale truncated toward zero as a 128-bit
// magnitude, the number of decimal digits of that magnitude, and whether
// nonzero digits were cut off. Callers refuse inexact values: a decimal
// column never rounds (money must not change silently). When ndigits > 38
// the magnitude is not computed (every caller rejects such values).
func (d *decNum) unscaled(scale int) (hi, lo uint64, ndigits int, inexact bool) {
	if len(d.digits) == 0 {
		return 0, 0, 0, false
	}
	shift := d.exp + scale // unscaled = digits × 10^shift
	keep := len(d.digits)
	if shift < 0 {
		// digits carry no trailing zeros, so cutting any is inexact.
		keep = max(0, len(d.digits)+shift)
		inexact = true
		shift = 0
	}
	ndigits = keep + shift
	if ndigits > 38 {
		return 0, 0, ndigits, inexact
	}
	for _, c := range d.digits[:keep] {
		hi, lo = mul128(hi, lo, 10)
		hi, lo = add128(hi, lo, uint64(c-'0'))
	}
	for range shift {
		hi, lo = mul128(hi, lo, 10)
	}
	return hi, lo, ndigits, inexact
}

// toInt64 converts to an integer with the given bounds: ok is false when
// the value is fractional (fractional) or outside [lo, hi] (range).
func (d *decNum) toInt64(min, max int64) (v int64, fractional, outOfRange bool) {
	mhi, mlo, nd, inexact := d.unscaled(0)
	if inexact {
		return 0, true, false
	}
	if nd > 19 || mhi != 0 {
		return 0, false, true
	}
	if d.neg {
		if mlo > uint64(-(min+1))+1 {
			return 0, false, true
		}
		return int64(-mlo), false, false // wraps correctly for min
	}
	if mlo > uint64(max) {
		return 0, false, true
	}
	return int64(mlo), false, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseSimpleFloat is the exact fast path for the decimals JSON producers
// usually send (-?digits[.digits], at most 15 digits): the digits are an
// exactly representable integer and 10^frac (frac <= 22) an exactly
// representable power, so one IEEE division rounds correctly, the same
// result strconv.ParseFloat returns. Anything else returns ok=false.
func parseSimpleFloat(tok []byte) (float64, bool) {
	i := 0
	neg := false
	if len(tok) > 0 && tok[0] == '-' {
		neg = true
		i = 1
	}
	var mant uint64
	nd, frac := 0, -1
	for ; i < len(tok); i++ {
		c := tok[i]
		if c == '.' && frac < 0 {
			frac = 0
			continue
		}
		if !isDigit(c) {
			return 0, false
		}
		mant = mant*10 + uint64(c-'0')
		nd++
		if frac >= 0 {
			frac++
		}
	}
	if nd == 0 || nd > 15 {
		return 0, false
	}
	f := float64(mant)
	if frac > 0 {
		f /= float64pow10[frac]
	}
	if neg {
		f = -f
	}
	return f, true
}

var float64pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16}

// parseSmallInt is the fast path for JSON integers: -?[0-9]{1,18} with no
// fraction or exponent, which covers nearly every integer a producer sends.
func parseSmallInt(tok []byte) (int64, bool) {
	i := 0
	neg := false
	if len(tok) > 0 && tok[0] == '-' {
		neg = true
		i = 1
	}
	n := len(tok) - i
	if n == 0 || n > 18 {
		return 0, false
	}
	var v int64
	for ; i < len(tok); i++ {
		c := tok[i]
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// 128-bit helpers on (hi, lo) pairs.

func mul128(hi, lo, m uint64) (uint64, uint64) {
	h, l := bits.Mul64(lo, m)
	return hi*m + h, l
}

func add128(hi, lo, a uint64) (uint64, uint64) {
	l, carry := bits.Add64(lo, a, 0)
	return hi + carry, l
}

// neg128 is two's complement negation.
func neg128(hi, lo uint64) (uint64, uint64) {
	hi, lo = ^hi, ^lo
	return add128(hi, lo, 1)
}

// div10 divides a 128-bit magnitude by 10.
func div10(hi, lo uint64) (qhi, qlo, rem uint64) {
	qhi = hi / 10
	r := hi % 10
	qlo, rem = bits.Div64(r, lo, 10)
	return qhi, qlo, rem
}

// appendUint128 appends the decimal digits of a magnitude.
func appendUint128(dst []byte, hi, lo uint64) []byte {
	if hi == 0 {
		return appendUint(dst, lo)
	}
	var buf [40]byte
	i := len(buf)
	for hi != 0 || lo != 0 {
		var r uint64
		hi, lo, r = div10(hi, lo)
		i--
		buf[i] = byte('0' + r)
	}
	return append(dst, buf[i:]...)
}

func appendUint(dst []byte, v uint64) []byte {
	var buf [20]byte
	i := len(buf)
	for v >= 10 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	i--
	buf[i] = byte('0' + v)
	return append(dst, buf[i:]...)
}

// appendDecimal renders a signed unscaled value at a scale exactly, as
// Spark's BigDecimal.toPlainString does: "-12.30", "0.05", "7".
func appendDecimal(dst []byte, neg bool, hi, lo uint64, scale int) []byte {
	var buf [48]byte
	digits := appendUint128(buf[:0], hi, lo)
	if neg && (hi != 0 || lo != 0) {
		dst = append(dst, '-')
	}
	if scale == 0 {
		return append(dst, digits...)
	}
	if len(digits) <= scale {
		dst = append(dst, '0', '.')
		for range scale - len(digits) {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-scale]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-scale:]...)
}

// decimalFromInt64 splits a signed unscaled int64 into sign and magnitude.
func decimalFromInt64(v int64) (neg bool, hi, lo uint64) {
	if v < 0 {
		return true, 0, uint64(-v)
	}
	return false, 0, uint64(v)
}

// decimalFromFixed reads a big-endian two's complement value.
func decimalFromFixed(b []byte) (neg bool, hi, lo uint64) {
	if len(b) > 0 && b[0]&0x80 != 0 {
		neg = true
		hi, lo = math.MaxUint64, math.MaxUint64
	}
	for _, c := range b {
		hi = hi<<8 | lo>>56
		lo = lo<<8 | uint64(c)
	}
	if neg {
		hi, lo = neg128(hi, lo)
	}
	return neg, hi, lo
}
