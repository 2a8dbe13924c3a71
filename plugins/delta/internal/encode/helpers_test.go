package encode_test

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// field renders one schema field; typ is Delta's JSON for the type
// (`"long"`, `{"type":"array",...}`).
func field(name, typ string, nullable bool) string {
	return fmt.Sprintf(`{"name":%q,"type":%s,"nullable":%t,"metadata":{}}`, name, typ, nullable)
}

func structType(fields ...string) string {
	return `{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`
}

func arrayType(elem string, containsNull bool) string {
	return fmt.Sprintf(`{"type":"array","elementType":%s,"containsNull":%t}`, elem, containsNull)
}

func mapType(key, val string, valueContainsNull bool) string {
	return fmt.Sprintf(`{"type":"map","keyType":%s,"valueType":%s,"valueContainsNull":%t}`, key, val, valueContainsNull)
}

func mustSchema(t testing.TB, fields ...string) *deltalog.StructType {
	t.Helper()
	s, err := deltalog.ParseSchema(structType(fields...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustEncoder(t testing.TB, schema *deltalog.StructType, parts []string, opts encode.Options) *encode.Encoder {
	t.Helper()
	if opts.FileName == nil {
		opts.FileName = func(i int) string { return fmt.Sprintf("part-%05d.snappy.parquet", i) }
	}
	enc, err := encode.New(schema, parts, opts)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// written is one file Flush produced, with its bytes.
type written struct {
	encode.File
	Data []byte
}

func flush(t testing.TB, enc *encode.Encoder) []written {
	t.Helper()
	var bufs []*bytes.Buffer
	files, err := enc.Flush(func(*encode.Target) (io.Writer, error) {
		b := new(bytes.Buffer)
		bufs = append(bufs, b)
		return b, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]written, len(files))
	for i, f := range files {
		out[i] = written{File: f, Data: bufs[i].Bytes()}
		if int64(len(out[i].Data)) != f.Size {
			t.Fatalf("file %d: Size %d, wrote %d bytes", i, f.Size, len(out[i].Data))
		}
	}
	return out
}

// encodeRecords adds records (offsets 0, 1, ...) and flushes.
func encodeRecords(t testing.TB, enc *encode.Encoder, records ...string) []written {
	t.Helper()
	for i, r := range records {
		if err := enc.Add([]byte(r), uint64(i)); err != nil {
			t.Fatalf("record %d %s: %v", i, r, err)
		}
	}
	return flush(t, enc)
}

func openParquet(t testing.TB, data []byte) *parquet.File {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// leafValues returns every value (with levels) of leaf column col of a
// single-row-group file.
func leafValues(t testing.TB, data []byte, col int) []parquet.Value {
	t.Helper()
	f := openParquet(t, data)
	if n := len(f.RowGroups()); n != 1 {
		t.Fatalf("%d row groups, want 1", n)
	}
	pages := f.RowGroups()[0].ColumnChunks()[col].Pages()
	defer pages.Close()
	var out []parquet.Value
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]parquet.Value, p.NumValues())
		n, err := p.Values().ReadValues(vals)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		for _, v := range vals[:n] {
			out = append(out, v.Clone())
		}
		parquet.Release(p)
	}
	return out
}

// readRows decodes every row into nested Go values (map[string]any for
// groups, []any for lists), with pointers dereferenced.
func readRows(t testing.TB, data []byte) []map[string]any {
	t.Helper()
	r := parquet.NewReader(openParquet(t, data))
	defer r.Close()
	var rows []map[string]any
	for {
		row := map[string]any{}
		err := r.Read(&row)
		if err == io.EOF {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, deref(row).(map[string]any))
	}
}

func deref(v any) any {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil
	}
	switch rv.Kind() {
	case reflect.Map:
		out := map[string]any{}
		for _, k := range rv.MapKeys() {
			var key string
			switch k.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				key = fmt.Sprint(k.Int())
			case reflect.String:
				key = k.String()
			default:
				key = fmt.Sprint(k.Interface())
			}
			out[key] = deref(rv.MapIndex(k).Interface())
		}
		return out
	case reflect.Struct:
		if rv.NumField() == 0 || rv.Type().Field(0).Tag.Get("parquet") == "" {
			return rv.Interface() // time.Time, big.Int, ...: not a group
		}
		out := map[string]any{}
		for i := range rv.NumField() {
			name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("parquet"), ",")
			out[name] = deref(rv.Field(i).Interface())
		}
		return out
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return string(rv.Bytes())
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = deref(rv.Index(i).Interface())
		}
		return out
	}
	return rv.Interface()
}

// addErr adds one record at offset 7 and returns the error text ("" for
// success).
func addErr(enc *encode.Encoder, record string) string {
	if err := enc.Add([]byte(record), 7); err != nil {
		return err.Error()
	}
	return ""
}
