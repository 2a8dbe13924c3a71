package transform_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/picomq/heavy-sinks/connect/transform"
)

// FuzzApply runs a chain of every type over arbitrary payloads: it never
// panics, calls a payload not JSON exactly when encoding/json does, and
// what it keeps is valid JSON holding what delete_fields left of the
// top-level object, values exact.
func FuzzApply(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":{"c":[1,2]},"op":"u"}`, `{"after":{"x":1},"a":"\u00e9"}`, `[1]`, `"s"`, `{"a":`,
		`{"a":1,"a":2}`, `{"b":{"c":null}}`, `{"x":1e400,"op":"c","k":-0.0}`, " {\"a\" :\n true } "} {
		f.Add([]byte(s))
	}
	full := chainOf(f,
		transform.Spec{Type: transform.DeleteFields, Paths: []string{"a", "b.c"}},
		transform.Spec{Type: transform.UpdateFields, Field: "x", RenameTo: "y", Value: "v", HasValue: true},
		transform.Spec{Type: transform.AddFields, Fields: []transform.Field{{Name: "o", Compute: "offset"}, {Name: "k", Compute: "key_base64"}}},
		transform.Spec{Type: transform.FilterRecords, Field: "op", In: []any{"c", int64(1)}, Action: "drop"},
		transform.Spec{Type: transform.FilterFields, Paths: []string{"y", "o", "k", "b", "after", "z"}},
		transform.Spec{Type: transform.UnwrapEnvelope, Field: "after", OnNull: "error"},
	)
	del := chainOf(f, transform.Spec{Type: transform.DeleteFields, Paths: []string{"a"}})
	f.Fuzz(func(t *testing.T, payload []byte) {
		valid := json.Valid(payload)
		for _, c := range []*transform.Chain{full, del} {
			out, keep, err := c.Apply(nil, payload, &meta)
			var re *transform.RecordError
			switch {
			case err != nil && !errors.As(err, &re):
				t.Fatalf("not a *RecordError: %v", err)
			case err != nil && re.NotJSON == valid:
				t.Fatalf("json.Valid %v, but %v", valid, err)
			case keep && !json.Valid(out):
				t.Fatalf("kept invalid JSON %q from %q", out, payload)
			}
		}
		// delete_fields of "a" is the object without "a", every other
		// value unchanged (compared as json.Number, so exactly).
		var in map[string]any
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.UseNumber()
		if !valid || dec.Decode(&in) != nil || in == nil {
			return
		}
		out, keep, err := del.Apply(nil, payload, &meta)
		if err != nil || !keep {
			t.Fatalf("delete_fields of an object: keep %v, %v", keep, err)
		}
		delete(in, "a")
		var got map[string]any
		dec = json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&got); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(in)
		b, _ := json.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Fatalf("from %q: got %s, want %s", payload, b, a)
		}
	})
}

func chainOf(tb testing.TB, specs ...transform.Spec) *transform.Chain {
	tb.Helper()
	c, i, err := transform.Compile(specs)
	if err != nil {
		tb.Fatalf("spec %d: %v", i, err)
	}
	return c
}
