package avro_test

import (
	"encoding/json"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// FuzzAppendJSON decodes arbitrary bytes with the schema of any vector
// (together they hold every type, logical type, union form, references,
// recursion and resolution): it never panics, and what decodes is valid
// JSON appended after dst. Seeds: the vectors' payloads.
//
//	go test -run XXX -fuzz FuzzAppendJSON -fuzztime 60s ./connect/decode/avro/
func FuzzAppendJSON(f *testing.F) {
	vs := vectors(f)
	codecs := make([]decode.Codec, len(vs))
	for i, v := range vs {
		var p []byte
		codecs[i], p = v.compile(f)
		f.Add(uint8(i), p)
	}
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		c := codecs[int(which)%len(codecs)]
		out, err := c.AppendJSON([]byte("x"), payload)
		if err != nil {
			if !decode.IsRecordError(err) || string(out) != "x" {
				t.Fatalf("error %v (record error: %v), dst %q", err, decode.IsRecordError(err), out)
			}
			return
		}
		if string(out[:1]) != "x" || !json.Valid(out[1:]) {
			t.Fatalf("invalid JSON: %q", out)
		}
	})
}
