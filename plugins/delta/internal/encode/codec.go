package encode

import (
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/parquet-go/parquet-go/format"
)

// snappyCodec is the SNAPPY Parquet codec at s2's default speed.
// parquet-go's own codec calls klauspost's snappy.Encode, which is s2's
// "better" level: about twice the CPU for a few percent of size on the
// small pages a 1000-record batch makes. The output is plain Snappy either
// way; every reader decodes it.
type snappyCodec struct{}

func (snappyCodec) String() string                            { return "SNAPPY" }
func (snappyCodec) CompressionCodec() format.CompressionCodec { return format.Snappy }

func (snappyCodec) Encode(dst, src []byte) ([]byte, error) {
	return s2.EncodeSnappy(dst[:cap(dst)], src), nil
}

func (snappyCodec) Decode(dst, src []byte) ([]byte, error) {
	return snappy.Decode(dst[:cap(dst)], src)
}
