package deltalog

import (
	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
)

// SignedFixedLenByteArrayType is the physical type of a decimal too wide
// for INT64 (precision > 18), ordered as signed numbers; it is
// ckptfile.SignedFixedLenByteArrayType, which says why parquet-go's own
// is wrong for decimals (ckptfile.DecimalNode is the whole decimal node,
// which checkpoints and the sink's data files use). Wrap it with
// parquet.Decimal.
func SignedFixedLenByteArrayType(n int) parquet.Type {
	return ckptfile.SignedFixedLenByteArrayType(n)
}
