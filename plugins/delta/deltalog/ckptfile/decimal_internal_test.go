package ckptfile

import "testing"

// Big-endian two's complement orders by the sign byte as signed, then the
// rest as unsigned: most negative, -1, 0, 1, most positive.
func TestCompareSigned(t *testing.T) {
	ordered := [][]byte{
		{0x80, 0x00, 0x00}, {0x80, 0x00, 0x01}, {0xff, 0xff, 0xfb}, {0xff, 0xff, 0xff},
		{0x00, 0x00, 0x00}, {0x00, 0x00, 0x01}, {0x00, 0x01, 0x00}, {0x7f, 0xff, 0xff},
	}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := compareSigned(a, b); got != want {
				t.Errorf("compareSigned(%x, %x) = %d, want %d", a, b, got, want)
			}
		}
	}
}
