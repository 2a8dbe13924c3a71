package hosttest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv"
)

// Paths of the host's source and the ABI header, relative to the repository
// root.
const (
	hostSource = "cmd/picomq-host/picomq_host.c"
	includeDir = "include"
)

// CFlags are the flags Build compiles the host with, before -I, -o, the
// source and -ldl.
var CFlags = []string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-g", "-pthread"}

// sourceRoot returns the repository root that holds the host's source: the
// working directory's (testenv.RepoRoot), or else the one this file was
// compiled from, for a test imported from another module.
func sourceRoot() (string, error) {
	var tried []string
	if root, err := testenv.RepoRoot(); err == nil {
		if _, err := os.Stat(filepath.Join(root, hostSource)); err == nil {
			return root, nil
		}
		tried = append(tried, root)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(file)))) // internal/testenv/hosttest/build.go
		if _, err := os.Stat(filepath.Join(root, hostSource)); err == nil {
			return root, nil
		}
		tried = append(tried, root)
	}
	return "", fmt.Errorf("hosttest: no %s under %q", hostSource, tried)
}

// Build compiles the host with gcc into dir and returns the binary's path.
// It finds the source under testenv.RepoRoot, or else where this package's
// own source is.
func Build(dir string) (string, error) {
	root, err := sourceRoot()
	if err != nil {
		return "", err
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("hosttest: building the C host needs gcc: %w", err)
	}
	return build(root, cc, dir)
}

func build(root, cc, dir string) (string, error) {
	out := filepath.Join(dir, "picomq_host")
	args := append(append([]string(nil), CFlags...),
		"-I", filepath.Join(root, includeDir),
		"-o", out, filepath.Join(root, hostSource), "-ldl")
	cmd := exec.Command(cc, args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("hosttest: %s %s: %w\n%s", cc, strings.Join(args, " "), err, msg)
	}
	return out, nil
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// BuildHost returns the path of a host binary built from the current source
// and header, building it at most once per content: it is cached under the
// user cache directory (os.TempDir if there is none), keyed by a hash of the
// source, the header, the compiler's path and CFlags. It fails tb if the
// build fails.
func BuildHost(tb testing.TB) string {
	tb.Helper()
	p, err := cachedBuild()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func cachedBuild() (string, error) {
	root, err := sourceRoot()
	if err != nil {
		return "", err
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("hosttest: building the C host needs gcc: %w", err)
	}
	sum := sha256.New()
	for _, f := range []string{hostSource, filepath.Join(includeDir, "picomq_sink.h")} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", fmt.Errorf("hosttest: %w", err)
		}
		fmt.Fprintf(sum, "%s %d\n", f, len(b))
		sum.Write(b)
	}
	fmt.Fprintf(sum, "%s %q\n", cc, CFlags)
	key := hex.EncodeToString(sum.Sum(nil))[:16]

	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[key]; ok {
		return p, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	base = filepath.Join(base, "picomq-heavy-sinks")
	final := filepath.Join(base, "e2e-host-"+key)
	bin := filepath.Join(final, "picomq_host")
	if _, err := os.Stat(bin); err != nil {
		// Build in a directory of our own and rename it into place, so that
		// concurrent test processes never see a half-written binary.
		if err := os.MkdirAll(base, 0o755); err != nil {
			return "", fmt.Errorf("hosttest: %w", err)
		}
		tmp, err := os.MkdirTemp(base, "build-")
		if err != nil {
			return "", fmt.Errorf("hosttest: %w", err)
		}
		defer os.RemoveAll(tmp)
		if _, err := build(root, cc, tmp); err != nil {
			return "", err
		}
		if err := os.Rename(tmp, final); err != nil {
			if _, serr := os.Stat(bin); serr != nil { // not another process's
				return "", fmt.Errorf("hosttest: %w", err)
			}
		}
	}
	built[key] = bin
	return bin, nil
}
