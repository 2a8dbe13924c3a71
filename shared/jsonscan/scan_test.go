package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/workload"
)

var validJSONSeeds = []string{
	``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-`, `1e`, `-1.25e-7`, `2.`, `00`,
	`"a"`, `"\u00e9\n\"\\\/\b\f\r\t"`, `"\u12"`, `"\x"`, "\"a\x01\"", "\"\xff\xfe\"", `"`, `"\`,
	`true`, `false`, `null`, `tru`, `nul`, `nulll`, `True`,
	`{}`, `[]`, `{ }`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `{"a":1,}`, `{"a" : [1, {"b": null}] }`, `{"a"}`, `{"a":}`,
	`{1:2}`, `[1]]`, `[[1]`, `{"a":1}{"b":2}`, `1 2`, " \t\r\n[1]\n ", "\v1", `{"a":"b"} x`, `[{}]`, `[[]]`, `{"a":{}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
}

func TestValid(t *testing.T) {
	for _, s := range validJSONSeeds {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.40q) = %v, json.Valid says %v", s, got, want)
		}
	}
	data, _ := workload.Delta(1, 100)
	for _, r := range data[0] {
		if !Valid(r.Payload) {
			t.Fatalf("validJSON refuses a workload record: %s", r.Payload)
		}
	}
}

// FuzzValid: Valid and json.Valid agree on every input.
func FuzzValid(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	data, _ := workload.Delta(1, 10)
	for _, r := range data[0] {
		f.Add(r.Payload)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if got, want := Valid(p), json.Valid(p); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", p, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	data, size := workload.Delta(1, 1000)
	for _, bc := range []struct {
		name  string
		valid func([]byte) bool
	}{{"Valid", Valid}, {"json.Valid", json.Valid}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(size) / 1000)
			for i := 0; b.Loop(); i++ {
				if !bc.valid(data[0][i%1000].Payload) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
