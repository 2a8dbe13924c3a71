package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the nearest directory at or above the working directory
// that holds a go.mod: the repository root when run from any of its
// packages (go test runs each test in its package's directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod at or above the working directory")
		}
		dir = parent
	}
}

// DistEnv names the directory with the built libraries when they are not
// in <repo>/dist (CI builds once and points every suite at the result).
const DistEnv = "PICOMQ_DIST"

// DistDir returns where buildscripts/build.sh put the libraries and the
// host: $PICOMQ_DIST, or else <repo>/dist. It does not check that anything
// was built there; Library does.
func DistDir() (string, error) {
	if dir := os.Getenv(DistEnv); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "dist"), nil
}

// Library returns the path of a built file under DistDir, name relative to
// it ("libpicomq_connector_delta_sink.so", "test/libpicomq_connector_test_a_sink.so").
// A missing file fails tb, telling to run `make build`; it never skips.
func Library(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := DistDir()
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s not built (%v): run `make build` first (or set %s to the directory that holds it)", name, err, DistEnv)
	}
	return p
}

// DeltaTablesEnv overrides where DeltaTables looks.
const DeltaTablesEnv = "PICOMQ_DELTA_TABLES"

// DeltaTablesDir returns the directory of the Delta conformance tables:
// $PICOMQ_DELTA_TABLES, or else ../shared/testdata/delta-tables from the
// repository root, without checking that it exists.
func DeltaTablesDir() (string, error) {
	if dir := os.Getenv(DeltaTablesEnv); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(root), "shared", "testdata", "delta-tables"), nil
}

// DeltaTables returns the directory of the Delta conformance tables (see
// the package documentation). A missing directory fails tb with where it
// looked and how to point it elsewhere.
func DeltaTables(tb testing.TB) string {
	tb.Helper()
	dir, err := DeltaTablesDir()
	if err != nil {
		tb.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a directory", dir)
		}
		tb.Fatalf("Delta conformance tables not found: %v\nThey live in shared/testdata/delta-tables beside the repository checkout; "+
			"check them out there or set %s to their directory.", err, DeltaTablesEnv)
	}
	return dir
}
