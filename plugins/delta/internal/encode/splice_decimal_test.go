package encode_test

import (
	"math/big"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// The column chunk bounds of a wide decimal (FIXED_LEN_BYTE_ARRAY) are
// signed numbers in a spliced file as in a batch's (ckptfile's
// SignedFixedLenByteArrayType): -5.00 in one file and 3.00 in the other
// give min -5.00 and max 3.00, not the order of their bytes, which would
// make a reader that prunes with them skip the negative rows.
func TestSpliceWideDecimalBoundsAreSigned(t *testing.T) {
	schema := mustSchema(t, field("d", `"decimal(30,2)"`, true))
	enc := mustEncoder(t, schema, nil, encode.Options{})
	a := encodeRecords(t, enc, `{"d":"3.00"}`)[0].Data
	b := encodeRecords(t, enc, `{"d":"-5.00"}`)[0].Data
	spliced, _, err := encode.Splice(nil, [][]byte{a, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	md, err := ckptfile.DecodeFooter(spliced)
	if err != nil {
		t.Fatal(err)
	}
	st := md.RowGroups[0].Columns[0].MetaData.Statistics
	signed := func(b []byte) string {
		v := new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		return v.String()
	}
	if lo, hi := signed(st.MinValue), signed(st.MaxValue); lo != "-500" || hi != "300" {
		t.Errorf("spliced chunk bounds %s..%s (unscaled), want -500..300", lo, hi)
	}
}
