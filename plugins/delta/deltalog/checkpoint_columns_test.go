package deltalog_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// The checkpoint readers find columns by name through one lookup (ckptfile.Lookup) whose
// rule is that a leaf is served only at the repetition depth its decoder
// reads: 0 for scalars, 1 for list elements and map keys. Two earlier
// lookups disagreed off that depth (one took a map key at any depth ≥ 1 and
// a scalar at any depth, the other exactly 1 and 0). They can only disagree
// on a column the lookup refuses; TestCheckpointColumnLookupForeign shows
// that no checkpoint or sidecar written by Spark, delta-rs, the kernel or
// this package has one, so the disagreement could not change a read of a
// real checkpoint. TestCheckpointColumnLookupRefuses shows the assertion
// can fail.

func TestCheckpointColumnLookupForeign(t *testing.T) {
	root := testenv.DeltaTables(t)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	writers := map[string]int{}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".tar.zst")
		// The 300k table's log has no Parquet checkpoint; unpacking it
		// would only cost time.
		if strings.HasPrefix(name, "300k-") || (!e.IsDir() && name == e.Name()) {
			continue
		}
		dir := tableDir(t, name)
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") ||
				!strings.Contains(filepath.ToSlash(path), "/_delta_log/") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			refused, createdBy, err := deltalog.CheckpointColumnLookup(data)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				return nil
			}
			if len(refused) > 0 {
				t.Errorf("%s (%s): lookup refuses columns %v", path, createdBy, refused)
			}
			files++
			writers[strings.Fields(createdBy + " ?")[0]]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d checkpoint and sidecar files, by writer: %v", files, writers)
	if files < 50 || writers["parquet-mr"] == 0 || writers["parquet-rs"] == 0 {
		t.Fatalf("only %d Parquet checkpoint files found under %s, by writer %v: want Spark's (parquet-mr) and delta-rs's (parquet-rs)", files, root, writers)
	}

	// And our own, with every column the readers look up filled.
	s := richTable(t, "")
	st, err := deltalog.LoadState(ctx, s, &deltalog.LoadOptions{Now: clockNow})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deltalog.WriteCheckpoint(ctx, s, st, &deltalog.CheckpointOptions{Now: clockNow}); err != nil {
		t.Fatal(err)
	}
	data, err := s.Get(ctx, deltalog.CheckpointPath(2))
	if err != nil {
		t.Fatal(err)
	}
	if refused, _, err := deltalog.CheckpointColumnLookup(data); err != nil || len(refused) > 0 {
		t.Fatalf("own checkpoint: refused %v, err %v", refused, err)
	}
}

// A map one repetition level too deep (a list of configuration maps) is
// refused: its keys' rows and value positions are not what ckptfile.ReadCells
// pairs, and the old lookup of the non-file actions read it as one map.
func TestCheckpointColumnLookupRefuses(t *testing.T) {
	str := parquet.String()
	schema := parquet.NewSchema("checkpoint", parquet.Group{
		"metaData": parquet.Optional(parquet.Group{
			"id":            parquet.Optional(str),
			"configuration": parquet.Repeated(parquet.Map(str, parquet.Optional(str))),
		}),
		"protocol": parquet.Optional(parquet.Group{
			"minReaderVersion": parquet.Repeated(parquet.Int(32)),
		}),
	})
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, schema)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	refused, _, err := deltalog.CheckpointColumnLookup(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(refused)
	if want := []string{"metaData.configuration", "protocol.minReaderVersion"}; !slices.Equal(refused, want) {
		t.Fatalf("refused %v, want %v", refused, want)
	}
}
