package decode_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
)

func TestMergeSchemas(t *testing.T) {
	const (
		v1 = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false},{"name":"name","type":"string","nullable":false}]}`
		// v2 adds price; v3 changes name's type and drops id; v4 nests.
		v2   = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false},{"name":"name","type":"string","nullable":false},{"name":"price","type":"decimal(20,4)","nullable":true}]}`
		v3   = `{"type":"struct","fields":[{"name":"name","type":"long","nullable":false},{"name":"price","type":"decimal(20,4)","nullable":false}]}`
		v4   = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true},{"name":"tags","type":{"type":"array","elementType":"string","containsNull":false},"nullable":false}]}`
		bad  = `{"type":"array","elementType":"long","containsNull":false}`
		fid  = `{"name":"id","type":"long","nullable":false,"metadata":{}}`
		fidN = `{"name":"id","type":"long","nullable":true,"metadata":{}}`
		// Nested: s2 adds addr.zip, s3 makes it a string, s4 makes
		// addr.street a long.
		s1     = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false},{"name":"addr","type":{"type":"struct","fields":[{"name":"street","type":"string","nullable":false}]},"nullable":false}]}`
		s2     = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false},{"name":"addr","type":{"type":"struct","fields":[{"name":"street","type":"string","nullable":false},{"name":"zip","type":"integer","nullable":false}]},"nullable":false}]}`
		s3     = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false},{"name":"addr","type":{"type":"struct","fields":[{"name":"street","type":"string","nullable":false},{"name":"zip","type":"string","nullable":false}]},"nullable":false}]}`
		s4     = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false},{"name":"addr","type":{"type":"struct","fields":[{"name":"street","type":"long","nullable":false}]},"nullable":false}]}`
		street = `{"name":"street","type":"string","nullable":false,"metadata":{}}`
		zipN   = `{"name":"zip","type":"integer","nullable":true,"metadata":{}}`
		// Arrays and maps of structs; e1/e2: an array's element type
		// differs.
		a1   = `{"type":"struct","fields":[{"name":"lines","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"sku","type":"string","nullable":false}]},"containsNull":false},"nullable":false},{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[{"name":"sku","type":"string","nullable":false}]},"valueContainsNull":false},"nullable":false}]}`
		a2   = `{"type":"struct","fields":[{"name":"lines","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"sku","type":"string","nullable":false},{"name":"qty","type":"long","nullable":false}]},"containsNull":true},"nullable":false},{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[{"name":"sku","type":"string","nullable":false},{"name":"qty","type":"long","nullable":false}]},"valueContainsNull":false},"nullable":false}]}`
		sku  = `{"name":"sku","type":"string","nullable":false,"metadata":{}}`
		qtyN = `{"name":"qty","type":"long","nullable":true,"metadata":{}}`
		e1   = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false},{"name":"tags","type":{"type":"array","elementType":"string","containsNull":false},"nullable":false}]}`
		e2   = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false},{"name":"tags","type":{"type":"array","elementType":"long","containsNull":false},"nullable":false}]}`
	)
	for _, c := range []struct {
		name string
		in   []string
		want string
	}{
		{"one", []string{v1}, `{"type":"struct","fields":[` + fid + `,{"name":"name","type":"string","nullable":false,"metadata":{}}]}`},
		{"same twice", []string{v1, v1}, `{"type":"struct","fields":[` + fid + `,{"name":"name","type":"string","nullable":false,"metadata":{}}]}`},
		{"a field added is appended, nullable", []string{v1, v2},
			`{"type":"struct","fields":[` + fid + `,{"name":"name","type":"string","nullable":false,"metadata":{}},{"name":"price","type":"decimal(20,4)","nullable":true,"metadata":{}}]}`},
		{"first-seen order", []string{v2, v1},
			`{"type":"struct","fields":[` + fid + `,{"name":"name","type":"string","nullable":false,"metadata":{}},{"name":"price","type":"decimal(20,4)","nullable":true,"metadata":{}}]}`},
		{"a type that differs is left out, a field one lacks is nullable", []string{v2, v3},
			`{"type":"struct","fields":[` + fidN + `,{"name":"price","type":"decimal(20,4)","nullable":true,"metadata":{}}]}`},
		{"left out for good once it differed", []string{v1, v3, v1},
			`{"type":"struct","fields":[` + fidN + `,{"name":"price","type":"decimal(20,4)","nullable":true,"metadata":{}}]}`},
		{"nullability is or'ed", []string{v1, v4},
			`{"type":"struct","fields":[` + fidN + `,{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"tags","type":{"type":"array","elementType":"string","containsNull":false},"nullable":true,"metadata":{}}]}`},
		{"nested structs merge: a field one lacks is appended, nullable", []string{s1, s2},
			`{"type":"struct","fields":[` + fid + `,{"name":"addr","type":{"type":"struct","fields":[` + street + `,` + zipN + `]},"nullable":false,"metadata":{}}]}`},
		{"nested: a field the later one lacks is nullable, first-seen order", []string{s2, s1},
			`{"type":"struct","fields":[` + fid + `,{"name":"addr","type":{"type":"struct","fields":[` + street + `,` + zipN + `]},"nullable":false,"metadata":{}}]}`},
		{"nested: only the conflicting leaf is left out, for good", []string{s2, s3, s2},
			`{"type":"struct","fields":[` + fid + `,{"name":"addr","type":{"type":"struct","fields":[` + street + `]},"nullable":false,"metadata":{}}]}`},
		{"arrays merge their elements, maps their values", []string{a1, a2},
			`{"type":"struct","fields":[{"name":"lines","type":{"type":"array","elementType":{"type":"struct","fields":[` + sku + `,` + qtyN + `]},"containsNull":true},"nullable":false,"metadata":{}},` +
				`{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[` + sku + `,` + qtyN + `]},"valueContainsNull":false},"nullable":false,"metadata":{}}]}`},
		{"a conflict at the top of a field leaves the field out", []string{e1, e2},
			`{"type":"struct","fields":[` + fid + `]}`},
		{"a struct left without fields is left out", []string{s1, s4},
			`{"type":"struct","fields":[` + fid + `]}`},
		{"not a struct", []string{v1, bad}, ""},
		{"not JSON", []string{"{"}, ""},
		{"none", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := make([][]byte, len(c.in))
			for i, s := range c.in {
				in[i] = []byte(s)
			}
			if got := string(decode.MergeSchemas(in...)); got != c.want {
				t.Fatalf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// The neutral form reads back as it is written.
func TestTypeRoundTrip(t *testing.T) {
	st := decode.Struct(
		decode.Field{Name: "m", Type: decode.Map(decode.Array(decode.Decimal(38, 2), true), false)},
		decode.Field{Name: "s", Type: decode.Struct(decode.Field{Name: "t", Type: decode.Primitive("timestamp_ntz"), Nullable: true}), Nullable: true},
	)
	b, err := st.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := decode.ParseSchema(b)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(st) {
		t.Fatalf("%s read back differently", b)
	}
	if b2, _ := back.MarshalJSON(); string(b2) != string(b) {
		t.Fatalf("%s != %s", b2, b)
	}
}
