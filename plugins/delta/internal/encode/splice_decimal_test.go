package encode_test

import (
	"bytes"
	"math/big"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// The column chunk bounds of a wide decimal (FIXED_LEN_BYTE_ARRAY) are
// signed numbers in a compacted file, spliced or merged, as in a batch's
// (ckptfile's SignedFixedLenByteArrayType): -5.00 in one file and 3.00 in
// the other give min -5.00 and max 3.00, not the order of their bytes,
// which would make a reader that prunes with them skip the negative rows.
func TestCompactedWideDecimalBoundsAreSigned(t *testing.T) {
	schema := mustSchema(t, field("d", `"decimal(30,2)"`, true))
	enc := mustEncoder(t, schema, nil, encode.Options{})
	a := encodeRecords(t, enc, `{"d":"3.00"}`)[0].Data
	b := encodeRecords(t, enc, `{"d":"-5.00"}`)[0].Data

	spliced, _, err := encode.Splice(nil, [][]byte{a, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSignedBounds(t, "spliced", spliced)

	coll, err := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var merged bytes.Buffer
	if _, err := encode.Merge(&merged, []*parquet.File{openParquet(t, a), openParquet(t, b)}, coll, ""); err != nil {
		t.Fatal(err)
	}
	checkSignedBounds(t, "merged", merged.Bytes())
	if got := readRows(t, merged.Bytes()); len(got) != 2 {
		t.Errorf("merged rows %v", got)
	}
}

func checkSignedBounds(t *testing.T, what string, data []byte) {
	t.Helper()
	md, err := ckptfile.DecodeFooter(data)
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
		t.Errorf("%s chunk bounds %s..%s (unscaled), want -500..300", what, lo, hi)
	}
}

// Wide decimals under structs and lists merge to the same rows and schema
// as one batch's file.
func TestMergeNestedWideDecimals(t *testing.T) {
	schema := mustSchema(t, field("st", structType(field("x", `"decimal(30,2)"`, true)), true),
		field("arr", arrayType(`"decimal(30,2)"`, true), true), field("l", `"long"`, true))
	records := []string{`{"st":{"x":"3.00"},"arr":["-1.50",null],"l":1}`, `{"st":{"x":"-5.00"},"arr":["2.25"],"l":2}`}
	whole := encodeRecords(t, mustEncoder(t, schema, nil, encode.Options{}), records...)[0].Data
	enc := mustEncoder(t, schema, nil, encode.Options{})
	a := encodeRecords(t, enc, records[0])[0].Data
	b := encodeRecords(t, enc, records[1])[0].Data
	coll, err := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var merged bytes.Buffer
	m, err := encode.Merge(&merged, []*parquet.File{openParquet(t, a), openParquet(t, b)}, coll, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readRows(t, merged.Bytes()), readRows(t, whole); !reflect.DeepEqual(got, want) {
		t.Errorf("merged rows\n%v\nwant\n%v", got, want)
	}
	if got, want := openParquet(t, merged.Bytes()).Schema(), openParquet(t, whole).Schema(); !parquet.EqualNodes(got, want) {
		t.Errorf("merged schema\n%v\nwant\n%v", got, want)
	}
	if m.NumRecords != 2 {
		t.Errorf("merged %d rows", m.NumRecords)
	}
}
