package avro_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/avro"
)

// vector is one case of testdata/vectors.json, encoded by fastavro
// (testdata/gen.py).
type vector struct {
	Name    string            `json:"name"`
	Writer  string            `json:"writer"`
	Refs    map[string]string `json:"refs"`
	Reader  string            `json:"reader"`
	Payload string            `json:"payload"`
	Want    string            `json:"want"`
}

func vectors(t testing.TB) []vector {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func (v vector) compile(t testing.TB) (decode.Codec, []byte) {
	t.Helper()
	c, err := avro.Compile(v.Writer, v.Refs, v.Reader)
	if err != nil {
		t.Fatalf("%s: Compile: %v", v.Name, err)
	}
	p, err := hex.DecodeString(v.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

func TestVectors(t *testing.T) {
	vs := vectors(t)
	if len(vs) < 20 {
		t.Fatalf("only %d vectors", len(vs))
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			c, p := v.compile(t)
			got, err := c.AppendJSON([]byte("prefix:"), p)
			if err != nil {
				t.Fatalf("AppendJSON: %v", err)
			}
			if want := "prefix:" + v.Want; string(got) != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
			if !json.Valid(got[len("prefix:"):]) {
				t.Fatalf("not valid JSON: %s", got)
			}
		})
	}
}

// Every strict prefix of a datum is truncated, and one byte more is
// trailing: both are record errors, and dst comes back as it was.
func TestTruncatedAndTrailing(t *testing.T) {
	for _, v := range vectors(t) {
		c, p := v.compile(t)
		for n := range len(p) {
			got, err := c.AppendJSON([]byte("x"), p[:n])
			assertRecordError(t, v.Name+" truncated", got, err, "")
		}
		got, err := c.AppendJSON([]byte("x"), append(bytes.Clone(p), 0))
		assertRecordError(t, v.Name+" trailing", got, err, "trailing bytes")
	}
}

func assertRecordError(t *testing.T, name string, got []byte, err error, contains string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, got %s", name, got)
	}
	if !decode.IsRecordError(err) {
		t.Fatalf("%s: %v is not a *decode.RecordError", name, err)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("%s: error %q does not say %q", name, err, contains)
	}
	if string(got) != "x" {
		t.Fatalf("%s: dst changed to %q", name, got)
	}
}

func TestBadPayloads(t *testing.T) {
	list := `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`
	deep := bytes.Repeat([]byte{0x00, 0x02}, 600) // 600 nested nodes
	deep = append(deep, 0x00, 0x00)
	for _, tc := range []struct {
		name, schema string
		payload      []byte
		contains     string
	}{
		{"union index past the end", `["null","string"]`, []byte{0x04}, "union index 2 out of range"},
		{"negative union index", `["null","string"]`, []byte{0x01}, "union index -1"},
		{"enum index past the end", `{"type":"enum","name":"E","symbols":["A","B"]}`, []byte{0x04}, "enum index 2"},
		{"negative length", `"string"`, []byte{0x01}, "negative length"},
		{"length past the payload", `"bytes"`, []byte{0xfe, 0xff, 0xff, 0xff, 0x0f, 'a'}, "truncated"},
		{"string not UTF-8", `"string"`, []byte{0x02, 0xff}, "not valid UTF-8"},
		{"map key not UTF-8", `{"type":"map","values":"int"}`, []byte{0x02, 0x02, 0xff, 0x00, 0x00}, "not valid UTF-8"},
		{"int past int32", `"int"`, []byte{0x80, 0x80, 0x80, 0x80, 0x10}, "out of the int range"},
		{"enum index past int32", `{"type":"enum","name":"E","symbols":["A"]}`, []byte{0x80, 0x80, 0x80, 0x80, 0x10}, "out of the int range"},
		{"bad boolean", `"boolean"`, []byte{0x02}, "invalid bool"},
		{"varint overflow", `"long"`, bytes.Repeat([]byte{0xff}, 11), ""},
		{"date past year 9999", `{"type":"int","logicalType":"date"}`, []byte{0xfe, 0xff, 0xff, 0xff, 0x07}, "outside years"},
		{"time past one day", `{"type":"int","logicalType":"time-millis"}`, []byte{0x80, 0xb8, 0xc9, 0x52}, "outside one day"},
		{"negative time", `{"type":"long","logicalType":"time-micros"}`, []byte{0x01}, "outside one day"},
		{"timestamp before year 0", `{"type":"long","logicalType":"timestamp-micros"}`, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "outside years"},
		{"nested too deep", list, deep, "nested deeper"},
		{"items of nothing", `{"type":"array","items":"null"}`, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00}, "items that take no bytes"},
		{"negative block count overflow", `{"type":"array","items":"int"}`, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00}, "block count"},
		{"error names the field", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","int"]}]}`, []byte{0x02, 0x06}, `field "b": union index 3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := avro.Compile(tc.schema, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.AppendJSON([]byte("x"), tc.payload)
			assertRecordError(t, tc.name, got, err, tc.contains)
		})
	}
}

// The bounds above are bounds, not refusals: just under them decodes.
func TestWithinBounds(t *testing.T) {
	list := `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`
	c, err := avro.Compile(list, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	p := append(bytes.Repeat([]byte{0x00, 0x02}, 500), 0x00, 0x00)
	got, err := c.AppendJSON(nil, p)
	if err != nil || !json.Valid(got) || strings.Count(string(got), `"v":0`) != 501 {
		t.Fatalf("500 levels: %v %.80s", err, got)
	}
	c, err = avro.Compile(`{"type":"array","items":"null"}`, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err = c.AppendJSON(nil, []byte{0x06, 0x00})
	if err != nil || string(got) != "[null,null,null]" {
		t.Fatalf("3 nulls: %v %s", err, got)
	}
}

func TestCompileErrors(t *testing.T) {
	rec := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	for _, tc := range []struct {
		name, writer, reader string
		refs                 map[string]string
		contains             string
	}{
		{"bad writer", `{"type":"nope"}`, "", nil, "writer schema"},
		{"unknown named type", `{"type":"record","name":"R","fields":[{"name":"a","type":"x.Missing"}]}`, "", nil, "writer schema"},
		{"bad reference", rec, "", map[string]string{"x": `{"type":`}, "reference"},
		{"bad reader", rec, `{"type":"record"`, nil, "reader schema"},
		{"reader cannot read", rec, `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`, nil, "cannot read"},
		{"added field without default", rec, `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"}]}`, nil, "cannot read"},
		{"long default past 2^53", rec, `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"long","default":9007199254740993}]}`, nil, "2^53"},
		{"nested long default past 2^53", rec, `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":{"type":"array","items":"long"},"default":[1,-9007199254740993]}]}`, nil, "2^53"},
		// hamba's parser turns the default into a Go int, and the encoder
		// keeps its low 32 bits: 3000000000 would land as -1294967296.
		{"int default past int32", rec, `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":3000000000}]}`, nil, "int range"},
		{"nested int default past int32", rec, `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":{"type":"map","values":"int"},"default":{"k":-2147483649}}]}`, nil, "int range"},
		// hamba's composite union may not name one type twice.
		{"two writer branches into one reader type", `["int","long"]`, `"long"`, nil, "cannot read"},
		{"recursive reader", `{"type":"record","name":"N","fields":[{"name":"n","type":["null","N"]}]}`,
			`{"type":"record","name":"N","fields":[{"name":"n","type":["null","N"]}]}`, nil, "recursive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := avro.Compile(tc.writer, tc.refs, tc.reader)
			if err == nil || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("err %v, want one saying %q", err, tc.contains)
			}
		})
	}
}

// Two schemas defining the same name differently compile apart: each
// Compile has its own named-type cache (registry versions of one subject).
func TestCompileIsolatesNames(t *testing.T) {
	a, err := avro.Compile(`{"type":"record","name":"Same","fields":[{"name":"a","type":"int"}]}`, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := avro.Compile(`{"type":"record","name":"Same","fields":[{"name":"b","type":"string"}]}`, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.AppendJSON(nil, []byte{0x02}); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("a: %s %v", got, err)
	}
	if got, err := b.AppendJSON(nil, []byte{0x02, 'z'}); err != nil || string(got) != `{"b":"z"}` {
		t.Fatalf("b: %s %v", got, err)
	}
}

// One Codec decodes from many goroutines at once (a Static decoder is
// shared by the partitions of a block).
func TestConcurrent(t *testing.T) {
	vs := vectors(t)
	codecs := make([]decode.Codec, len(vs))
	payloads := make([][]byte, len(vs))
	for i, v := range vs {
		codecs[i], payloads[i] = v.compile(t)
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			for i := range 200 {
				k := (g + i) % len(vs)
				got, err := codecs[k].AppendJSON(nil, payloads[k])
				if err != nil || string(got) != vs[k].Want {
					done <- fmt.Errorf("%s: %s %v", vs[k].Name, got, err)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
