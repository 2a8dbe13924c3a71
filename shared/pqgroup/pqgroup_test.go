package pqgroup_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/shared/pqgroup"
)

// TestOrderKept: columns come out in the order they were added — written
// to a file and read back — where parquet.Group would sort them by name.
func TestOrderKept(t *testing.T) {
	inner := pqgroup.New(2)
	inner.Add("z", parquet.Optional(parquet.Leaf(parquet.Int64Type)))
	inner.Add("a", parquet.String())
	root := pqgroup.New(3)
	root.Add("b", parquet.Int(32))
	root.Add("s", parquet.Optional(inner))
	root.Add("a", parquet.String())
	schema := parquet.NewSchema("t", root)

	var buf bytes.Buffer
	w := parquet.NewGenericWriter[any](&buf, schema)
	row := parquet.Row{parquet.Int32Value(7).Level(0, 0, 0), parquet.Int64Value(9).Level(0, 2, 1),
		parquet.ByteArrayValue([]byte("x")).Level(0, 1, 2), parquet.ByteArrayValue([]byte("y")).Level(0, 0, 3)}
	if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, p := range f.Schema().Columns() {
		got = append(got, p)
	}
	want := [][]string{{"b"}, {"s", "z"}, {"s", "a"}, {"a"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	if n := root.GoType().NumField(); n != 3 {
		t.Fatalf("GoType has %d fields, want 3", n)
	}
}
