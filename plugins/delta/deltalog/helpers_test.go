package deltalog_test

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// tableDir returns the directory of a conformance table (testenv.DeltaTables:
// shared/testdata/delta-tables beside the repository checkout), unpacking
// <name>.tar.zst into a temporary directory when the table ships compressed.
// A missing table fails the test: the fixtures are part of the suite, not
// optional.
func tableDir(tb testing.TB, name string) string {
	tb.Helper()
	testTablesDir := testenv.DeltaTables(tb)
	dir := filepath.Join(testTablesDir, name)
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir
	}
	archive := dir + ".tar.zst"
	if _, err := os.Stat(archive); err != nil {
		tb.Fatalf("test table %q not found under %s: %v", name, testTablesDir, err)
	}
	tmp := tb.TempDir()
	untarZstd(tb, archive, tmp)
	out := filepath.Join(tmp, name)
	if _, err := os.Stat(out); err != nil {
		tb.Fatalf("archive %s did not contain %s/: %v", archive, name, err)
	}
	return out
}

func untarZstd(tb testing.TB, archive, dest string) {
	tb.Helper()
	f, err := os.Open(archive)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			tb.Fatalf("untar %s: %v", archive, err)
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || strings.HasPrefix(name, "..") {
			tb.Fatalf("untar %s: unsafe path %q", archive, h.Name)
		}
		target := filepath.Join(dest, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				tb.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				tb.Fatal(err)
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				tb.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				tb.Fatal(err)
			}
			if err := out.Close(); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// memStoreFromDir copies a table directory into a MemStore, paths relative
// to the table root with '/' separators — the layout Store expects.
func memStoreFromDir(tb testing.TB, dir string) *deltalog.MemStore {
	tb.Helper()
	ms := deltalog.NewMemStore()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ms.Put(filepath.ToSlash(rel), data)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return ms
}

// tableStore loads a named test table into a MemStore.
func tableStore(tb testing.TB, name string) *deltalog.MemStore {
	tb.Helper()
	return memStoreFromDir(tb, tableDir(tb, name))
}

// dirStore is a Store over a table directory on disk: reads come from the
// directory (through an overlay of writes), writes go to the in-memory
// overlay, so a fixture is never modified.
type dirStore struct {
	dir     string
	overlay *deltalog.MemStore
}

func newDirStore(dir string) *dirStore { return &dirStore{dir: dir, overlay: deltalog.NewMemStore()} }

func (d *dirStore) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	var out []deltalog.FileInfo
	// Only the directory part of prefix is walked (non-recursively), which is
	// all the log needs.
	dirPart := prefix[:strings.LastIndex(prefix, "/")+1]
	entries, err := os.ReadDir(filepath.Join(d.dir, filepath.FromSlash(dirPart)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		p := dirPart + e.Name()
		if e.IsDir() || !strings.HasPrefix(p, prefix) || p <= startAfter {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		out = append(out, deltalog.FileInfo{Path: p, Size: info.Size(), ModTime: info.ModTime()})
	}
	extra, err := d.overlay.List(ctx, prefix, startAfter)
	if err != nil {
		return nil, err
	}
	out = append(out, extra...)
	slices.SortFunc(out, func(a, b deltalog.FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return slices.CompactFunc(out, func(a, b deltalog.FileInfo) bool { return a.Path == b.Path }), nil
}

func (d *dirStore) Get(ctx context.Context, path string) ([]byte, error) {
	if data, err := d.overlay.Get(ctx, path); err == nil {
		return data, nil
	}
	data, err := os.ReadFile(filepath.Join(d.dir, filepath.FromSlash(path)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("dirstore: %s: %w", path, deltalog.ErrNotFound)
	}
	return data, err
}

func (d *dirStore) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	if _, err := os.Stat(filepath.Join(d.dir, filepath.FromSlash(path))); err == nil {
		return fmt.Errorf("dirstore: %s: %w", path, deltalog.ErrAlreadyExists)
	}
	return d.overlay.PutIfAbsent(ctx, path, data)
}

func (d *dirStore) Delete(ctx context.Context, path string) error {
	return d.overlay.Delete(ctx, path)
}
