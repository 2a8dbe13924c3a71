package sdktest_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

func TestLineDiff(t *testing.T) {
	got := sdktest.LineDiff("a\nb\nc", "a\nx\nc\nd")
	if got != "+ x\n- b\n+ d\n" && got != "- b\n+ x\n+ d\n" {
		t.Fatalf("%q", got)
	}
	if sdktest.LineDiff("same", "same") != "" {
		t.Fatal("diff of equal texts")
	}
}
