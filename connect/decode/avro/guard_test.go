package avro

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// guard, Compile's wrapper, turns a panic of the schema library into an
// error, and passes anything else through.
func TestGuardRecoversPanic(t *testing.T) {
	c, err := guard(func() (decode.Codec, error) { panic("hamba: index out of range") })
	if c != nil || err == nil || !strings.Contains(err.Error(), "avro: the schema library panicked on this schema: hamba: index out of range") {
		t.Fatalf("got %v, %v", c, err)
	}
	want, err := Compile(`"long"`, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := guard(func() (decode.Codec, error) { return want, nil }); c != want || err != nil {
		t.Fatalf("without a panic: %v, %v", c, err)
	}
}
