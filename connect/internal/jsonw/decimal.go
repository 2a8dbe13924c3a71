package jsonw

import (
	"math/big"
	"strconv"
)

// AppendDecimal appends, as a JSON string, the decimal whose unscaled
// value is b (two's complement, big-endian: Avro's decimal, Confluent's
// protobuf Decimal) with scale digits after the point, exactly: "-12.340"
// keeps the scale's zeros. No bytes is 0. A negative scale multiplies by
// 10^-scale ("1200" for 12 at scale -2); the caller bounds it.
func AppendDecimal(dst, b []byte, scale int) []byte {
	dst = append(dst, '"')
	var digits []byte
	var buf [24]byte
	if len(b) <= 8 {
		var v int64
		if len(b) > 0 && b[0]&0x80 != 0 {
			v = -1
		}
		for _, c := range b {
			v = v<<8 | int64(c)
		}
		if v < 0 {
			dst = append(dst, '-')
			digits = strconv.AppendUint(buf[:0], uint64(-v), 10) // -MinInt64 wraps to its own magnitude as uint64
		} else {
			digits = strconv.AppendUint(buf[:0], uint64(v), 10)
		}
	} else {
		v := new(big.Int).SetBytes(b)
		if b[0]&0x80 != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
			dst = append(dst, '-')
			v.Neg(v)
		}
		digits = v.Append(nil, 10)
	}
	switch whole := len(digits) - scale; {
	case scale <= 0:
		dst = append(dst, digits...)
		if len(digits) > 1 || digits[0] != '0' {
			for ; scale < 0; scale++ {
				dst = append(dst, '0')
			}
		}
	case whole > 0:
		dst = append(dst, digits[:whole]...)
		dst = append(dst, '.')
		dst = append(dst, digits[whole:]...)
	default:
		dst = append(dst, '0', '.')
		for ; whole < 0; whole++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	}
	return append(dst, '"')
}
