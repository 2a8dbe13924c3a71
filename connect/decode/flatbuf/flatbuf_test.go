package flatbuf_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/flatbuf"
)

// The buffers in testdata were written by flatc -b from the *.json beside
// them (deep.bin by the Python runtime): make generate-flatbuf.

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compile(t testing.TB, bfbs, root string) *flatbuf.Codec {
	t.Helper()
	c, err := flatbuf.Compile(read(t, bfbs), root)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func decodeOK(t *testing.T, c *flatbuf.Codec, payload []byte) string {
	t.Helper()
	out, err := c.AppendJSON(nil, payload)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("not JSON: %s", out)
	}
	return string(out)
}

// Expected JSON, written from the *.json inputs by hand: scalar fields
// always (absent ones as the schema's default), others when set, keys in
// declaration order.
const (
	wantFull = `{"scalars":{"b":true,"i8":-128,"u8":255,"i16":-32768,"u16":65535,"i32":-2147483648,"u32":4294967295,` +
		`"i64":-9223372036854775808,"u64":18446744073709551615,"f32":3.14,"f64":2.718281828459045},` +
		`"d_int":7,"d_double":-0.25,"d_bool":false,"d_color":"Green","d_nan":1,"opt":0,` +
		`"name":"héllo \"quoted\"\n\u0001","ints":[1,-2,2147483647],"strs":["a","","ü"],` +
		`"inners":[{"name":"x","n":1},{"n":2}],"vecs":[{"x":1,"y":2,"z":3},{"x":-1.5,"y":0,"z":1e+30}],` +
		`"colors":["Red","Blue"],"pos":{"x":0.1,"y":0.2,"z":0.3},` +
		`"pair":{"a":-7,"b":9007199254740993,"tag":[1,2,255],"v":{"x":1,"y":2,"z":3},"color":"Blue"},` +
		`"any_type":"Other","any":{"s":"other","ok":false},` +
		`"anys_type":["Inner","Vec3"],"anys":[{"name":"in","n":3},{"x":4,"y":5,"z":6}],` +
		`"flags":"Fast Cheap","bytes":"AAEC+vv8","signed_bytes":[-1,0,1],"doubles":[0.1,1e+300,-5e-324],` +
		`"child":{"d_int":1,"d_double":1.5,"d_bool":true,"d_color":"Blue","d_nan":"NaN","opt":null,"name":"kid",` +
		`"any_type":"Inner","any":{"name":"deep","n":-1},"flags":0}}`
	wantEmpty = `{"d_int":42,"d_double":1.5,"d_bool":true,"d_color":"Blue","d_nan":"NaN","opt":null,"any_type":"NONE","flags":0}`
	wantEdge  = `{"scalars":{"b":false,"i8":0,"u8":0,"i16":0,"u16":0,"i32":0,"u32":0,"i64":0,"u64":0,"f32":"NaN","f64":"-Infinity"},` +
		`"d_int":42,"d_double":"Infinity","d_bool":true,"d_color":3,"d_nan":"NaN","opt":null,` +
		`"any_type":"Vec3","any":{"x":1,"y":2,"z":3},"flags":255,"doubles":[1e+21,1e-7,123456789012345680000,0.000001]}`
	wantOrder = `{"id":1234567890123,"customer":"Ada Lovelace","amount":1234.56,"quantity":3,"currency":"EUR",` +
		`"status":"Shipped","created_at_us":1788470104123456,"tags":["priority","gift"],"shipped":true,"discount":0.15,` +
		`"address":{"street":"12 Analytical Row","city":"London","country":"GB"},"sku":"SKU-000123-XL"}`
)

func TestDecode(t *testing.T) {
	kitchen := compile(t, "kitchen.bfbs", "")
	for _, tc := range []struct {
		name  string
		codec *flatbuf.Codec
		want  string
	}{
		// Every scalar width at its extremes, defaults overridden, escapes,
		// vectors of scalars, strings, tables, structs and enums, a struct
		// with an array and a nested struct, a union of each kind, bit
		// flags, bytes, and a child table whose absent fields take defaults.
		{"full", kitchen, wantFull},
		// An empty table: every scalar's default (optional: null, an enum's
		// by name, NaN), nothing else.
		{"empty", kitchen, wantEmpty},
		// NaN and infinities, an enum value and bit flags the schema does not
		// name (numbers), a struct as a union member, float formatting.
		{"edge", kitchen, wantEdge},
		{"order", compile(t, "order.bfbs", ""), wantOrder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decodeOK(t, tc.codec, read(t, tc.name+".bin")); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// A string union member, a vector of unions of three kinds, and a nested
// flatbuffer: its bytes as base64, which decode with the nested root.
func TestUnionsAndNested(t *testing.T) {
	kitchen := compile(t, "kitchen.bfbs", "")
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(decodeOK(t, kitchen, read(t, "unions.bin"))), &got); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"any_type":  `"Label"`,
		"any":       `"a label"`,
		"anys_type": `["Label","Other","Inner"]`,
		"anys":      `["x",{"s":"o","ok":true},{"n":9}]`,
	} {
		if string(got[key]) != want {
			t.Errorf("%s = %s, want %s", key, got[key], want)
		}
	}
	var b64 string
	if err := json.Unmarshal(got["nested"], &b64); err != nil {
		t.Fatalf("nested = %s: %v", got["nested"], err)
	}
	nested, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeOK(t, compile(t, "kitchen.bfbs", "Inner"), nested); got != `{"name":"nest","n":5}` {
		t.Errorf("nested buffer decodes to %s", got)
	}
}

// Without --bfbs-builtins the schema does not say an enum is bit_flags: a
// combination of flags stays a number (a single named flag would be its
// name, as for any enum).
func TestBitFlagsNeedBuiltins(t *testing.T) {
	got := decodeOK(t, compile(t, "kitchen-plain.bfbs", ""), read(t, "full.bin"))
	if want := strings.Replace(wantFull, `"flags":"Fast Cheap"`, `"flags":5`, 1); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRootType(t *testing.T) {
	for _, root := range []string{"", "Root", "kitchen.Root"} {
		if c := compile(t, "kitchen.bfbs", root); c.RootType() != "kitchen.Root" {
			t.Errorf("root %q: %s", root, c.RootType())
		}
	}
	for root, want := range map[string]string{
		"Vec3":         "is a struct",
		"Nope":         "has no table",
		"kitchen.Nope": "has no table",
	} {
		if _, err := flatbuf.Compile(read(t, "kitchen.bfbs"), root); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("root %q: error %v, want %q", root, err, want)
		}
	}
}

// A file that is not a binary schema, or a damaged one, is an error at
// Compile (never a panic); so is a schema feature the walk does not read.
func TestCompileRefuses(t *testing.T) {
	bfbs := read(t, "kitchen.bfbs")
	for name, b := range map[string][]byte{
		"empty":       nil,
		"fbs source":  read(t, "kitchen.fbs"),
		"a buffer":    read(t, "full.bin"),
		"first bytes": bfbs[:64],
	} {
		if _, err := flatbuf.Compile(b, ""); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
	// Every prefix and every byte overwritten: an error or a codec, never a
	// panic.
	for n := range len(bfbs) {
		_, _ = flatbuf.Compile(bfbs[:n], "")
		damaged := append([]byte(nil), bfbs...)
		damaged[n] ^= 0xff
		_, _ = flatbuf.Compile(damaged, "")
	}
}

func TestLoad(t *testing.T) {
	c, err := flatbuf.Load(filepath.Join("testdata", "order.bfbs"), "shop.Order")
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeOK(t, c, read(t, "order.bin")); got != wantOrder {
		t.Errorf("got %s", got)
	}
	if _, err := flatbuf.Load(filepath.Join("testdata", "order.fbs"), ""); err == nil || !strings.Contains(err.Error(), "order.fbs") {
		t.Errorf("Load of a source schema: %v", err)
	}
}

// AppendJSON appends: dst's bytes stay, and on an error dst comes back as
// it was.
func TestAppends(t *testing.T) {
	c := compile(t, "order.bfbs", "")
	dst := []byte(`[`)
	out, err := c.AppendJSON(dst, read(t, "order.bin"))
	if err != nil || string(out) != `[`+wantOrder {
		t.Fatalf("%s, %v", out, err)
	}
	out, err = c.AppendJSON(out, []byte{1, 0, 0})
	if err == nil || string(out) != `[`+wantOrder {
		t.Fatalf("after an error: %s, %v", out, err)
	}
	if !decode.IsRecordError(err) {
		t.Errorf("%v is not a record error", err)
	}
}

// One Codec decodes on many goroutines at once (the runtime's partitions);
// run under -race.
func TestConcurrent(t *testing.T) {
	c := compile(t, "kitchen.bfbs", "")
	full := read(t, "full.bin")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if out, err := c.AppendJSON(nil, full); err != nil || string(out) != wantFull {
					t.Errorf("%s %v", out, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
