package release_test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// What ships is built on no test code: no Go program in a release links
// package testing or a test helper (internal/testenv and everything under
// it, and the module's *test packages such as sdktest or redshifttest).
// A production package that imports one for convenience would put the test
// harness into the runtime, where a change made for a test can break
// production with no hint.
func TestShipsNoTestCode(t *testing.T) {
	goTool, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
	if err != nil {
		t.Fatal(err)
	}
	for _, main := range slices.Sorted(maps.Values(goArtifacts)) {
		cmd := exec.Command(goTool, "list", "-deps", main)
		cmd.Dir = repoRoot(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", main, err, stderrOf(err))
		}
		var bad []string
		for _, pkg := range strings.Fields(string(out)) {
			if isTestCode(pkg) {
				bad = append(bad, pkg)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s links test code: %s", main, strings.Join(bad, " "))
		}
	}
}

func isTestCode(pkg string) bool {
	if pkg == "testing" || strings.HasPrefix(pkg, "testing/") {
		return true
	}
	own, ok := strings.CutPrefix(pkg, modulePath+"/")
	return ok && (own == "internal/testenv" || strings.HasPrefix(own, "internal/testenv/") ||
		strings.HasSuffix(own, "test"))
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}
