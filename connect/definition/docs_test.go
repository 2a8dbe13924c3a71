package definition_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

var update = flag.Bool("update", false, "rewrite the generated tables of docs/runtime.md from keys.go")

const (
	runtimeDoc = "../../docs/runtime.md"
	regenerate = "go test ./connect/definition -run TestDocs -update"
	beginMark  = "<!-- Generated from connect/definition/keys.go. Do not edit: run\n     " + regenerate + " -->\n"
	endMark    = "<!-- End of the generated tables. -->\n"
)

// TestDocs keeps the tables of docs/runtime.md, "Definitions", generated
// from the declaration of the keys; the prose around them is the doc's own.
func TestDocs(t *testing.T) {
	doc, err := os.ReadFile(runtimeDoc)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(doc), beginMark)
	_, after, ok2 := strings.Cut(rest, endMark)
	if !ok || !ok2 {
		t.Fatalf("%s: no generated region: put\n%s\n%s\nwhere the tables go, then run %s", runtimeDoc, beginMark, endMark, regenerate)
	}
	want := before + beginMark + "\n" + definition.Markdown() + "\n" + endMark + after
	sdktest.Golden(t, runtimeDoc, want, *update, regenerate)
}
