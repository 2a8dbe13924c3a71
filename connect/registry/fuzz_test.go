package registry_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/registry"
)

// FuzzAppendJSON: any payload decodes or is a record error (the fake
// registry always answers) once the unknown-id grace has passed, and
// never panics. Only id 1 is registered.
func FuzzAppendJSON(f *testing.F) {
	for _, seed := range [][]byte{nil, {0}, {1, 0, 0, 0, 1}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 1, 'b', 'a', 'd'}, {0, 0xff, 0xff, 0xff, 0xff, 0}} {
		f.Add(seed)
	}
	fr := &fakeRegistry{ids: map[int]map[string]any{1: {"schema": "s1"}}, versions: map[string]map[string]any{}}
	srv := httptestServer(f, fr)
	cl, err := registry.New(registry.Config{URLs: []string{srv}})
	if err != nil {
		f.Fatal(err)
	}
	d := registry.NewDecoder(cl, sr.TypeAvro, (&compiler{}).compile)
	clock := setClock(d)
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := d.AppendJSON(context.Background(), "t", nil, payload)
		if err != nil && !decode.IsRecordError(err) && strings.Contains(err.Error(), "is not in the registry") {
			clock.advance(registry.DefaultUnknownIDGrace) // an unknown id: transient for the grace only
			out, err = d.AppendJSON(context.Background(), "t", nil, payload)
		}
		if err != nil {
			if !decode.IsRecordError(err) {
				t.Fatalf("payload %x: transient error %v from a registry that answers", payload, err)
			}
			return
		}
		if len(payload) < 5 || payload[0] != 0 || binary.BigEndian.Uint32(payload[1:5]) != 1 || len(out) == 0 {
			t.Fatalf("payload %x decoded to %s", payload, out)
		}
	})
}
