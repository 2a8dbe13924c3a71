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
