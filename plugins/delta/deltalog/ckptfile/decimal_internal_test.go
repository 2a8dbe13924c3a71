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

func TestDecimalWidth(t *testing.T) {
	// Spark's minBytesForPrecision for precisions 1..38.
	want := []int{1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 6, 6, 6, 7, 7, 8, 8, 9, 9, 9, 10, 10, 11, 11, 11, 12, 12, 13, 13, 13, 14, 14, 15, 15, 16, 16, 16}
	for p := 1; p <= 38; p++ {
		if got := DecimalWidth(p); got != want[p-1] {
			t.Errorf("DecimalWidth(%d) = %d, want %d", p, got, want[p-1])
		}
	}
}
