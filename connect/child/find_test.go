package child_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/child"
)

func TestFindHost(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, child.HostName)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	if got, err := child.FindHost("", dir); err != nil || got != bin {
		t.Errorf("in the plugin dir: %q, %v", got, err)
	}
	if got, err := child.FindHost(bin, t.TempDir()); err != nil || got != bin {
		t.Errorf("--host: %q, %v", got, err)
	}
	if _, err := child.FindHost(filepath.Join(dir, "nope"), dir); err == nil {
		t.Error("a --host that does not exist was accepted")
	}
	if _, err := child.FindHost("", t.TempDir()); err == nil || !strings.Contains(err.Error(), "buildscripts/build.sh") {
		t.Errorf("nothing anywhere: %v", err)
	}
}
