// Package sdktest holds test helpers shared by the SDK's and the plugins' tests:
// Logs collects an instance's log lines, Golden checks generated files.
package sdktest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Golden checks that the file at path holds want. With update set it writes
// want instead; otherwise a mismatch fails the test with a line diff and the
// command that regenerates the file.
func Golden(t testing.TB, path, want string, update bool, regenerate string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v\nGenerate it: %s", err, regenerate)
	}
	if string(got) != want {
		abs, _ := filepath.Abs(path)
		t.Fatalf("%s is stale: it no longer matches what generates it.\n\n%s\nRegenerate it:\n\n    %s\n", abs, LineDiff(string(got), want), regenerate)
	}
}

// LineDiff is a minimal diff: lines only in have (-) and only in want (+),
// in order. Meant for small files such as generated docs.
func LineDiff(have, want string) string {
	a, b := strings.Split(have, "\n"), strings.Split(want, "\n")
	lcs := make([][]int, len(a)+1) // longest common subsequence table
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&out, "+ %s\n", b[j])
			j++
		default:
			fmt.Fprintf(&out, "- %s\n", a[i])
			i++
		}
	}
	return out.String()
}
