package encode_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

func TestUnknownFieldsAreListed(t *testing.T) {
	enc := mustEncoder(t, mustSchema(t, field("id", `"long"`, true)), nil, encode.Options{})
	for i, p := range []string{
		`{"id":1,"a":1,"b\u0021":2}`,
		`{"id":"x","c":3}`, // fails: leaves no trace
		`{"a":null,"id":2}`,
		`{"id":3}`,
	} {
		_ = enc.Add([]byte(p), uint64(10+i))
	}
	want := []encode.UnknownField{{Name: "a", Count: 2, FirstOffset: 10}, {Name: "b!", Count: 1, FirstOffset: 10}}
	if got := enc.Unknown(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Unknown() = %+v, want %+v", got, want)
	}
	enc.Reset()
	if got := enc.Unknown(); len(got) != 0 {
		t.Fatalf("after Reset: %+v", got)
	}
	// Nested unknown fields are not top-level ones.
	enc = mustEncoder(t, mustSchema(t, field("s", structType(field("x", `"long"`, true)), true)), nil, encode.Options{})
	if err := enc.Add([]byte(`{"s":{"x":1,"y":2}}`), 0); err != nil {
		t.Fatal(err)
	}
	if got := enc.Unknown(); len(got) != 0 {
		t.Fatalf("nested field listed: %+v", got)
	}
}

func TestNewColumns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		payloads []string
		want     string // struct<...> of the new columns, or
		err      string // a *ColumnError containing this
	}{
		{"primitives", []string{`{"id":1,"s":"x","l":-3,"d":1.5,"e":1e3,"b":true}`}, "struct<s:string,l:long,d:double,e:double,b:boolean>", ""},
		{"long then double", []string{`{"n":1}`, `{"n":2.5}`}, "struct<n:double>", ""},
		{"double then long", []string{`{"n":2.5}`, `{"n":1}`}, "struct<n:double>", ""},
		{"null defers", []string{`{"n":null}`, `{"m":null,"k":1}`}, "struct<k:long>", ""},
		{"null then value", []string{`{"n":null}`, `{"n":"x"}`}, "struct<n:string>", ""},
		{"struct fields merge", []string{`{"s":{"a":1}}`, `{"s":{"b":"x","a":null}}`, `{"s":null}`}, "struct<s:struct<a:long,b:string>>", ""},
		{"array", []string{`{"a":[]}`, `{"a":[1,null,2]}`}, "struct<a:array<long>>", ""},
		{"array of structs", []string{`{"a":[{"x":1},{"y":[true]}]}`}, "struct<a:array<struct<x:long,y:array<boolean>>>>", ""},
		{"escaped name", []string{`{"a\u0062":1}`}, "struct<ab:long>", ""},
		{"conflict", []string{`{"n":1}`, `{"n":"a"}`}, "", `field "n" cannot become a column: its values have two types in this batch: long at offset 100, string at offset 101`},
		{"nested conflict", []string{`{"s":{"a":[1]}}`, `{"s":{"a":[{}]}}`}, "", `field "s.a[]"`},
		{"empty array only", []string{`{"a":[]}`, `{"a":null}`}, "", `field "a" cannot become a column: its arrays are empty or hold only nulls`},
		{"array of nulls", []string{`{"a":[null]}`}, "", `element type is unknown`},
		{"nested null only", []string{`{"s":{"a":1,"b":null}}`}, "", `field "s.b" cannot become a column: it is only null`},
		{"empty object", []string{`{"s":{}}`}, "", `its objects are empty`},
		{"bad name", []string{`{"first name":"x"}`}, "", `field "first name" cannot become a column: a column name must not`},
		{"empty name", []string{`{"":1}`}, "", `field "" cannot become a column`},
		{"case of a column", []string{`{"ID":1}`}, "", `differs only in case from "id"`},
		{"case of a sibling", []string{`{"a":1,"A":2}`}, "", `differs only in case from "a"`},
		{"nested bad name", []string{`{"s":{"x=y":1}}`}, "", `field "s.x=y"`},
		{"beyond long", []string{`{"n":9223372036854775808}`}, "", `beyond the range of a long`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := mustEncoder(t, mustSchema(t, field("id", `"long"`, true)), nil, encode.Options{InferUnknown: true})
			for i, p := range tc.payloads {
				if err := enc.Add([]byte(p), uint64(100+i)); err != nil {
					t.Fatal(err)
				}
			}
			cols, err := enc.NewColumns()
			if tc.err != "" {
				var ce *encode.ColumnError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want a ColumnError containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := (&deltalog.StructType{Fields: cols}).String(); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			for _, c := range cols {
				if !c.Nullable {
					t.Fatalf("column %s not nullable", c.Name)
				}
			}
			// The columns take the values they were inferred from.
			schema := mustSchema(t, field("id", `"long"`, true))
			schema.Fields = append(schema.Fields, cols...)
			enc2 := mustEncoder(t, schema, nil, encode.Options{})
			for i, p := range tc.payloads {
				if err := enc2.Add([]byte(p), uint64(100+i)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Without InferUnknown nothing is typed.
func TestNewColumnsNeedsInferUnknown(t *testing.T) {
	enc := mustEncoder(t, mustSchema(t, field("id", `"long"`, true)), nil, encode.Options{})
	if err := enc.Add([]byte(`{"n":1}`), 0); err != nil {
		t.Fatal(err)
	}
	if cols, err := enc.NewColumns(); err != nil || len(cols) != 0 {
		t.Fatalf("NewColumns() = %v, %v", cols, err)
	}
}

// FuzzNewColumns: for any payload the encoder accepts, inference never
// panics, and the columns it proposes accept the payload (the property
// the sink relies on when it encodes a batch again against the evolved
// schema).
//
//	go test -run XXX -fuzz FuzzNewColumns ./plugins/delta/internal/encode/
func FuzzNewColumns(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"s":"x","l":-3,"d":1.5,"e":1e3,"b":true}`, `{"a":[{"x":1},{"y":[true]}],"n":null}`,
		`{"s":{"a":1,"b":"x"},"t":[[1.5],[2]]}`, `{"a":[1,"x"]}`, `{"a\u0000":{"\ud800":1}}`, `{"n":-0.0e-0}`,
		`{"id":1,"a":1,"a":"x"}`,
	} {
		f.Add([]byte(s))
	}
	base := mustSchema(f, field("id", `"long"`, true))
	f.Fuzz(func(t *testing.T, payload []byte) {
		enc := mustEncoder(t, base, nil, encode.Options{InferUnknown: true})
		if err := enc.Add(payload, 7); err != nil {
			return
		}
		cols, err := enc.NewColumns()
		var ce *encode.ColumnError
		if err != nil {
			if !errors.As(err, &ce) {
				t.Fatalf("not a ColumnError: %v", err)
			}
			return
		}
		schema := &deltalog.StructType{Fields: append(append([]deltalog.StructField(nil), base.Fields...), cols...)}
		if _, err := deltalog.MarshalSchema(schema); err != nil {
			t.Fatal(err)
		}
		enc2, err := encode.New(schema, nil, encode.Options{})
		if err != nil {
			t.Fatalf("schema %s: %v", schema, err)
		}
		if err := enc2.Add(payload, 7); err != nil {
			t.Fatalf("schema %s refuses the payload it was inferred from: %v", schema, err)
		}
	})
}
