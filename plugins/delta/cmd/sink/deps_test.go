package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeltaLibraryImportsNoHeavyTree keeps out of the Delta library the
// dependency trees that cost it its size budget (issue 14: 25 MB stripped)
// for nothing it uses: Arrow, which azblob's container package imports from
// v1.8.1 on (go.mod says why azblob stays at v1.8.0), and Google's generated
// Cloud Storage client with its gRPC tree (the sink speaks GCS's JSON API
// over plain HTTP). make release checks the bytes; this names the cause.
func TestDeltaLibraryImportsNoHeavyTree(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	banned := []string{
		"github.com/apache/arrow-go/",
		"cloud.google.com/go/storage",
		"google.golang.org/grpc",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, b := range banned {
			if strings.HasPrefix(pkg, b) {
				t.Errorf("the Delta library imports %s", pkg)
			}
		}
	}
}
