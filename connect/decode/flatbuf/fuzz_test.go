package flatbuf_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode/flatbuf"
)

// FuzzAppendJSON: any bytes, decoded as a kitchen.Root and as a
// kitchen.Node, give a record error that is not a recovered panic, or valid
// JSON (checkSafe). Seeds: every test buffer and the crafted Node.
//
//	go test -run '^$' -fuzz FuzzAppendJSON -fuzztime 90s ./connect/decode/flatbuf/
func FuzzAppendJSON(f *testing.F) {
	bins, _ := filepath.Glob(filepath.Join("testdata", "*.bin"))
	for _, p := range bins {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(node(3, 5))
	codecs := []*flatbuf.Codec{compile(f, "kitchen.bfbs", ""), compile(f, "kitchen.bfbs", "Node"), compile(f, "order.bfbs", "")}
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, c := range codecs {
			checkSafe(t, c, payload)
		}
	})
}

// FuzzCompile: a damaged schema file is an error or a Codec, never a
// panic or a runaway allocation; a Codec it gives decodes safely.
//
//	go test -run '^$' -fuzz FuzzCompile -fuzztime 60s -fuzzminimizetime 2s ./connect/decode/flatbuf/
//
// (The seeds are kilobytes: with the default minimize time the engine
// spends most of the run minimizing each new input.)
func FuzzCompile(f *testing.F) {
	for _, name := range []string{"kitchen.bfbs", "order.bfbs"} {
		f.Add(read(f, name))
	}
	full := read(f, "full.bin")
	f.Fuzz(func(t *testing.T, bfbs []byte) {
		c, err := flatbuf.Compile(bfbs, "")
		if err == nil {
			checkSafe(t, c, full)
		}
	})
}
