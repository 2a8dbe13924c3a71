package protodec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
)

// vector is one payload of testdata/vectors.json or registry.json, written
// by testdata/gen.py with Python protobuf and confluent-kafka.
type vector struct {
	Name    string          `json:"name"`
	Message string          `json:"message"`
	Payload []byte          `json:"payload"`
	Want    json.RawMessage `json:"want"`
}

type registryFile struct {
	Schema  string            `json:"schema"`
	Refs    map[string]string `json:"refs"`
	Vectors []vector          `json:"vectors"`
}

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func descriptorSet(t testing.TB) []byte {
	t.Helper()
	set, err := os.ReadFile("testdata/shop.binpb")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestFromDescriptorSet(t *testing.T) {
	var vectors []vector
	readJSON(t, "vectors.json", &vectors)
	set := descriptorSet(t)
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			c, err := protodec.FromDescriptorSet(set, v.Message)
			if err != nil {
				t.Fatal(err)
			}
			assertDecodes(t, c, v)
		})
	}
}

// TestFromSchema decodes what confluent-kafka's ProtobufSerializer wrote
// (message indexes [0], [0, 0], [1], [2], and [1, 1] after a map entry), with the schema in both forms a
// registry returns: as its serializer registered it (a base64
// FileDescriptorProto, the mock registry keeps it) and as .proto text (what
// Confluent's registry returns by default).
func TestFromSchema(t *testing.T) {
	var reg registryFile
	readJSON(t, "registry.json", &reg)
	if len(reg.Vectors) != 5 || len(reg.Refs) != 1 {
		t.Fatalf("registry.json: %d vectors, %d refs", len(reg.Vectors), len(reg.Refs))
	}
	forms := map[string]func() (string, map[string]string){
		"serialized": func() (string, map[string]string) { return reg.Schema, reg.Refs },
		"text": func() (string, map[string]string) {
			return readText(t, "shop/v1/order.proto"), map[string]string{"shop/v1/common.proto": readText(t, "shop/v1/common.proto")}
		},
	}
	for form, schema := range forms {
		text, refs := schema()
		c, err := protodec.FromSchema(text, refs)
		if err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		for _, v := range reg.Vectors {
			t.Run(form+"/"+v.Name, func(t *testing.T) { assertDecodes(t, c, v) })
		}
	}
}

func readText(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// assertDecodes decodes v after a prefix already in dst and compares the
// JSON with v.Want token by token: keys in the same order, numbers equal
// as exact decimals.
func assertDecodes(t *testing.T, c decode.Codec, v vector) {
	t.Helper()
	prefix := []byte(`[1,`)
	got, err := c.AppendJSON(append([]byte(nil), prefix...), v.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("dst prefix lost: %s", got)
	}
	got = got[len(prefix):]
	if !json.Valid(got) {
		t.Fatalf("invalid JSON: %s", got)
	}
	if err := sameJSON(got, v.Want); err != nil {
		t.Fatalf("%v\n got: %s\nwant: %s", err, got, v.Want)
	}
}

func sameJSON(got, want []byte) error {
	g, w := json.NewDecoder(bytes.NewReader(got)), json.NewDecoder(bytes.NewReader(want))
	g.UseNumber()
	w.UseNumber()
	for {
		gt, gerr := g.Token()
		wt, werr := w.Token()
		if gerr == io.EOF && werr == io.EOF {
			return nil
		}
		if gerr != nil || werr != nil {
			return errors.Join(gerr, werr, errors.New("token streams differ in length"))
		}
		if gn, ok := gt.(json.Number); ok {
			wn, ok := wt.(json.Number)
			if !ok {
				return fmt.Errorf("number %s, want %v", gn, wt)
			}
			a, aok := new(big.Rat).SetString(string(gn))
			b, bok := new(big.Rat).SetString(string(wn))
			if !aok || !bok || a.Cmp(b) != 0 {
				return fmt.Errorf("number %s, want %s", gn, wn)
			}
			continue
		}
		if gt != wt {
			return fmt.Errorf("token %#v, want %#v", gt, wt)
		}
	}
}

// compact removes the whitespace protojson may add (it varies its output
// on purpose).
func compact(t *testing.T, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
