package protodec_test

import (
	"encoding/json"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
)

// FuzzAppendJSON feeds arbitrary bytes to the registry codec (message
// indexes, then any of the schema's messages, the well-known types among
// them): it never panics, every error is a record error, and without one
// the output is one valid JSON value appended to dst.
func FuzzAppendJSON(f *testing.F) {
	var reg registryFile
	readJSON(f, "registry.json", &reg)
	for _, v := range reg.Vectors {
		f.Add(v.Payload)
	}
	var vectors []vector
	readJSON(f, "vectors.json", &vectors)
	for _, v := range vectors {
		f.Add(append([]byte{0x00}, v.Payload...))
	}
	c, err := protodec.FromSchema(reg.Schema, reg.Refs)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := c.AppendJSON([]byte("x"), payload)
		if err != nil {
			if !decode.IsRecordError(err) {
				t.Fatalf("%T: %v", err, err)
			}
			if string(out) != "x" {
				t.Fatalf("dst changed on error: %q", out)
			}
			return
		}
		if len(out) < 1 || out[0] != 'x' || !json.Valid(out[1:]) {
			t.Fatalf("invalid JSON: %q", out)
		}
	})
}
