package ckptfile

import (
	"bytes"

	"github.com/parquet-go/parquet-go"
)

// SignedFixedLenByteArrayType is the physical type of a decimal too wide
// for INT64 (precision > 18): a big-endian two's complement of n bytes.
// parquet-go orders FIXED_LEN_BYTE_ARRAY values as unsigned bytes whatever
// the logical type, so its min/max statistics (column chunk and page index)
// put -5.00 above 3.00, and a reader that prunes with them skips rows that
// match. Parquet orders DECIMAL as signed numbers; this type compares and
// bounds its pages that way. Wrap it with parquet.Decimal.
func SignedFixedLenByteArrayType(n int) parquet.Type {
	return signedFLBA{parquet.FixedLenByteArrayType(n)}
}

type signedFLBA struct{ parquet.Type }

func (t signedFLBA) Compare(a, b parquet.Value) int {
	return compareSigned(a.ByteArray(), b.ByteArray())
}

func (t signedFLBA) NewColumnBuffer(columnIndex, numValues int) parquet.ColumnBuffer {
	return signedBuffer{t.Type.NewColumnBuffer(columnIndex, numValues)}
}

// compareSigned orders two big-endian two's complement numbers of one
// length: the sign byte as signed, the rest as unsigned.
func compareSigned(a, b []byte) int {
	if len(a) == 0 || len(b) == 0 {
		return bytes.Compare(a, b)
	}
	if a[0] != b[0] {
		if int8(a[0]) < int8(b[0]) {
			return -1
		}
		return 1
	}
	return bytes.Compare(a[1:], b[1:])
}

type signedBuffer struct{ parquet.ColumnBuffer }

func (b signedBuffer) Page() parquet.Page { return signedPage{b.ColumnBuffer.Page()} }

func (b signedBuffer) Clone() parquet.ColumnBuffer { return signedBuffer{b.ColumnBuffer.Clone()} }

type signedPage struct{ parquet.Page }

func (p signedPage) Slice(i, j int64) parquet.Page { return signedPage{p.Page.Slice(i, j)} }

// Bounds returns the page's smallest and largest value in signed order.
func (p signedPage) Bounds() (min, max parquet.Value, ok bool) {
	values := p.Page.Data()
	data, size := values.FixedLenByteArray()
	if size <= 0 || len(data) < size {
		return min, max, false
	}
	lo, hi := data[:size], data[:size]
	for off := size; off+size <= len(data); off += size {
		v := data[off : off+size]
		if compareSigned(v, lo) < 0 {
			lo = v
		}
		if compareSigned(v, hi) > 0 {
			hi = v
		}
	}
	return parquet.FixedLenByteArrayValue(bytes.Clone(lo)), parquet.FixedLenByteArrayValue(bytes.Clone(hi)), true
}
