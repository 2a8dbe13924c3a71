package delta_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
)

// Files the sink writes on file:// are created with 0666 less the umask,
// log files (commits, checkpoints, _last_checkpoint, all written through a
// temporary file) exactly like data files, so that a reader running as
// another user can read the whole table. The host runs under umask 002,
// unlike the test process, so the mode cannot come out right by accident.
func TestFileModesFollowUmask(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "regions")
	uri := fileURI(dir)
	py(t, createRegions, uri, `{"delta.checkpointInterval": "2"}`)
	existing := map[string]bool{}
	walkFiles(t, dir, func(rel string, _ fs.FileInfo) { existing[rel] = true })

	h := newHarness(t, hosttest.Wrapper("sh", "-c", `umask 002 && exec "$@"`, "sh"))
	inst := h.open("modes", map[string]any{"table_uri": uri})
	for n := range 4 {
		consume(t, inst, regionEvents("modes", n*3, 3))
	}
	waitForFile(t, checkpointFile(dir, 4))
	waitForFile(t, filepath.Join(dir, "_delta_log", "_last_checkpoint"))
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}

	const want = fs.FileMode(0o666 &^ 0o002)
	kinds := map[string]int{}
	walkFiles(t, dir, func(rel string, info fs.FileInfo) {
		if existing[rel] {
			return
		}
		kind := "data"
		switch {
		case filepath.Base(rel) == "_last_checkpoint":
			kind = "_last_checkpoint"
		case filepath.Ext(rel) == ".json":
			kind = "commit"
		case filepath.Dir(rel) == "_delta_log":
			kind = "checkpoint"
		}
		kinds[kind]++
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s file %s has mode %v, want %v", kind, rel, got, want)
		}
	})
	if kinds["data"] == 0 || kinds["commit"] != 4 || kinds["checkpoint"] == 0 || kinds["_last_checkpoint"] != 1 {
		t.Fatalf("new files by kind %v", kinds)
	}
}

// walkFiles calls fn for every regular file under root, by slash path
// relative to root.
func walkFiles(t *testing.T, root string, fn func(rel string, info fs.FileInfo)) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fn(filepath.ToSlash(rel), info)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
