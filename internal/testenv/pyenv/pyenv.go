// Package pyenv gives tests the project's Python virtualenv (delta-rs,
// pyarrow), created on first use by buildscripts/pyenv.sh. Tests that need
// it fail when it cannot be made; they never skip.
package pyenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv"
)

var (
	once   sync.Once
	python string
	setup  error
	output string
)

// Python returns the virtualenv's python, creating the env if needed.
func Python(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			setup = err
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(root, "buildscripts", "pyenv.sh"))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		python, setup, output = strings.TrimSpace(string(out)), err, stderr.String()
	})
	if setup != nil {
		tb.Fatalf("python test env (buildscripts/pyenv.sh): %v\n%s", setup, output)
	}
	return python
}

// exitNow ends every script without interpreter teardown: with pyarrow 26
// and deltalake 1.6 loaded, about half of all exits after a table scan die
// in std::terminate ("terminate called without an active exception") while
// native threads are torn down, after the script's work is done.
const exitNow = "\nimport os as _os, sys as _sys\n_sys.stdout.flush(); _sys.stderr.flush(); _os._exit(0)\n"

// Run runs a Python script with args and returns its stdout; a failure
// fails the test with stderr.
func Run(tb testing.TB, script string, args ...string) string {
	tb.Helper()
	return RunEnv(tb, nil, script, args...)
}

// RunEnv is Run with "NAME=value" entries added to the script's
// environment (they win over the test process's): parallel tests point
// their scripts at different stores this way, where t.Setenv would be
// refused.
func RunEnv(tb testing.TB, env []string, script string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(Python(tb), append([]string{"-c", script + exitNow}, args...)...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return string(out)
}
